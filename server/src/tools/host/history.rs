//! Session history search for a tool: the tool builds the reach from the
//! call's scope ([`crate::history::Reach`]); the host runs the search.

use futures_util::future::BoxFuture;

use crate::history::{Page, Reach, Request, SearchError};

/// History search.
pub trait HistoryHost: Send + Sync {
    /// History search inside a reach the tool built from the call's scope.
    fn search_history<'a>(
        &'a self,
        reach: &'a Reach,
        request: &'a Request,
    ) -> BoxFuture<'a, Result<Page, SearchError>>;
}
