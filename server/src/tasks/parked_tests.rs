use std::time::Duration;

use super::*;

fn ready(t: &mut Ticket) -> bool {
    futures_util::FutureExt::now_or_never(t.woken()).is_some()
}

#[tokio::test]
async fn an_end_wakes_only_the_waiters_of_that_task() {
    let parked = Parked::default();
    let mut a1 = parked.park("task_a");
    let mut a2 = parked.park("task_a");
    let mut b = parked.park("task_b");
    assert_eq!(parked.len(), 3);
    assert_eq!(parked.wake("task_a"), 2);
    assert!(ready(&mut a1) && ready(&mut a2));
    assert!(!ready(&mut b));
    assert_eq!(parked.wake("task_unknown"), 0);
    drop((a1, a2));
    assert_eq!(parked.len(), 1);
}

#[tokio::test]
async fn an_end_between_parking_and_waiting_is_not_lost() {
    let parked = Parked::default();
    let mut t = parked.park("task_a");
    parked.wake("task_a");
    tokio::time::timeout(Duration::from_secs(5), t.woken())
        .await
        .expect("the earlier wake is kept");
}

#[tokio::test]
async fn a_dropped_ticket_unregisters_and_wake_all_reaches_everyone() {
    let parked = Parked::default();
    let gone = parked.park("task_a");
    drop(gone);
    assert!(parked.is_empty());
    let mut a = parked.park("task_a");
    let mut b = parked.park("task_b");
    assert_eq!(parked.wake_all(), 2);
    assert!(ready(&mut a) && ready(&mut b));
    assert!(parked.is_empty());
}
