//! Sending a [`ChunkedBody`] upstream without joining its chunks.
//!
//! The pass's upstream body is mostly slices of the previous one ([`crate::list_writer`]);
//! the chunks go to the socket as they are, with the body's exact length announced
//! (`Content-Length`, not chunked transfer encoding, which some providers' front ends refuse
//! or buffer).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

pub use mc_wire::chunked_body::ChunkedBody;

/// The body to send: a single chunk as it is, several streamed one after the other with the
/// exact length announced.
pub fn request_body(body: ChunkedBody) -> reqwest::Body {
    if body.chunks().len() <= 1 {
        return reqwest::Body::from(body.into_bytes());
    }
    let remaining = body.len() as u64;
    reqwest::Body::wrap(Sending {
        chunks: body.chunks().to_vec().into_iter(),
        remaining,
    })
}

/// A body being sent: the chunks left and their length.
struct Sending {
    chunks: std::vec::IntoIter<Bytes>,
    remaining: u64,
}

impl http_body::Body for Sending {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        Poll::Ready(this.chunks.next().map(|chunk| {
            this.remaining -= chunk.len() as u64;
            Ok(Frame::data(chunk))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
#[path = "chunked_body_tests.rs"]
pub(crate) mod tests;
