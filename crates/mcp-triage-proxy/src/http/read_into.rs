//! [`poll_read_into`]: a read from a socket into a connection's buffer, shared by the client
//! side and the upstream side.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
use tokio::io::{AsyncRead, ReadBuf};

/// The room a read asks for: most MCP requests and responses fit whole.
pub(super) const READ_ROOM: usize = 16 * 1024;

/// Reads what `io` has into `buf`'s spare room (made at least [`READ_ROOM`] bytes): the number
/// of bytes read, 0 at the end of the stream.
pub(super) fn poll_read_into<R: AsyncRead + ?Sized>(
    io: Pin<&mut R>,
    cx: &mut Context<'_>,
    buf: &mut BytesMut,
) -> Poll<io::Result<usize>> {
    if buf.capacity() - buf.len() < READ_ROOM {
        buf.reserve(READ_ROOM);
    }
    let before = buf.len();
    let mut rb = ReadBuf::uninit(buf.spare_capacity_mut());
    ready!(io.poll_read(cx, &mut rb))?;
    let n = rb.filled().len();
    // SAFETY: `poll_read` initialised the first `n` bytes of the spare capacity.
    unsafe { buf.set_len(before + n) };
    Poll::Ready(Ok(n))
}
