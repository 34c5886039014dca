//! Copying bytes from a reader to a writer as they come, for the relay that carries the login
//! node's HTTP through an `srun` step. `std::io::copy` is not used: between a socket and a pipe
//! it splices on Linux, and `srun` then saw the request on its stdin only when the client
//! closed, so a request-and-wait client (HTTP keep-alive) waited forever.

use std::io::{Read, Write};

/// Copies until `from` ends or either side fails; every chunk is written whole and flushed
/// before the next read. Returns the bytes copied.
pub(crate) fn pump(mut from: impl Read, mut to: impl Write) -> u64 {
    let mut buf = [0u8; 16 * 1024];
    let mut total = 0;
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return total,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                    return total;
                }
                total += n as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_arrives_in_order() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut out = Vec::new();
        assert_eq!(pump(&data[..], &mut out), data.len() as u64);
        assert_eq!(out, data);
    }
}
