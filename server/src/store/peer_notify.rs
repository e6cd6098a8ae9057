//! The notification a committed event batch sends to the other server
//! instances sharing one PostgreSQL database (`NOTIFY demiurge_events`):
//! `session:last_seq` pairs, cut under PostgreSQL's payload limit. The store
//! sends it inside the batch's transaction; [`crate::events`]' listener
//! reads it back (`events::peers`).

/// The PostgreSQL channel committed batches are announced on.
pub const CHANNEL: &str = "demiurge_events";

/// `sid:seq,sid:seq` payloads, each under PostgreSQL's 8,000-byte limit.
pub fn payloads(pairs: &[(String, i64)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for (sid, seq) in pairs {
        let item = format!("{sid}:{seq}");
        if !cur.is_empty() && cur.len() + item.len() + 1 > 7_000 {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(',');
        }
        cur.push_str(&item);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The `(session, last_seq)` pairs of a payload; malformed items are skipped.
pub fn parse(payload: &str) -> Vec<(&str, i64)> {
    payload
        .split(',')
        .filter_map(|p| {
            let (sid, seq) = p.rsplit_once(':')?;
            Some((sid, seq.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_stay_small() {
        let pairs: Vec<(String, i64)> =
            (0..500).map(|i| (format!("{:036}", i), i as i64)).collect();
        let ps = payloads(&pairs);
        assert!(ps.len() > 1);
        let mut back = Vec::new();
        for p in &ps {
            assert!(p.len() <= 7_100);
            back.extend(parse(p).into_iter().map(|(s, q)| (s.to_owned(), q)));
        }
        assert_eq!(back, pairs);
        assert!(parse("garbage,,x:y").is_empty());
    }
}
