//! A managed call counted as in flight for the dreamer, from its plan until its answer has
//! been sent (or the call is refused, or the client goes away).
//!
//! The dreamer borrows a project's session credentials; a run made while a call of that
//! project is in flight on the same credential would compete for its rate limit, so the
//! scheduler defers it ([`mc_dreamer::InFlight`]). The call is keyed by its project and the
//! digest of its upstream and credentials ([`CredentialId`]), never the key itself. A call
//! whose project is unknown has no dreamer run to hold back and is not counted.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderMap, Response};
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use mc_dreamer::{CallGuard, CredentialId};

use crate::app::App;
use crate::historian_start::session_endpoint;
use crate::planned::Planned;
use crate::provider::Provider;

/// Counts `planned`'s call in flight until the returned guard drops.
pub fn begin(
    app: &App,
    provider: Provider,
    headers: &HeaderMap,
    planned: &Planned,
) -> Option<CallGuard> {
    let project = planned.project.as_ref()?;
    let upstream = app.settings.upstream(provider);
    let endpoint = session_endpoint(provider, upstream, headers, &planned.model);
    Some(
        app.dreamer_calls
            .begin(project, CredentialId::of(&endpoint)),
    )
}

/// `response` with the call still counted until its body has been sent or dropped.
pub fn until_sent(response: Response<Body>, guard: Option<CallGuard>) -> Response<Body> {
    let Some(guard) = guard else {
        return response;
    };
    response.map(|body| {
        Body::new(Counted {
            body,
            _guard: guard,
        })
    })
}

/// A response body that holds its call's guard.
struct Counted {
    body: Body,
    _guard: CallGuard,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
