//! The ports a run's ports are chosen from, and the order they are tried in.

use std::io::Read;

/// The first port of the range the ports are chosen from.
const RANGE_START: u16 = 10_000;
/// Random tries before the range is walked port by port.
const RANDOM_TRIES: usize = 64;

/// The ports chosen from: [`RANGE_START`] up to the start of the kernel's ephemeral range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub(super) first: u16,
    /// One past the last.
    pub(super) end: u16,
}

impl Range {
    /// This node's range.
    pub(crate) fn of_node() -> Self {
        let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range");
        Self::below_ephemeral(text.ok().as_deref())
    }

    /// The range below the ephemeral range that `ip_local_port_range` (`LOW HIGH`) gives.
    fn below_ephemeral(ip_local_port_range: Option<&str>) -> Self {
        let low = ip_local_port_range
            .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
            .unwrap_or(32768);
        Self {
            first: RANGE_START,
            end: low.max(RANGE_START),
        }
    }

    fn len(&self) -> u16 {
        self.end - self.first
    }

    /// The order the range is tried in: [`RANDOM_TRIES`] ports at random, then every port
    /// from a random one on (an attacker who holds most of the range slows the walk, never
    /// ends it).
    pub(super) fn tries(
        &self,
        random: &mut dyn FnMut() -> u32,
    ) -> impl Iterator<Item = u16> + use<> {
        let (first, len) = (self.first, self.len());
        let pick = move |r: u32| first + (r % u32::from(len.max(1))) as u16;
        let randoms: Vec<u16> = if len == 0 {
            Vec::new()
        } else {
            (0..RANDOM_TRIES).map(|_| pick(random())).collect()
        };
        let start = random();
        let walk =
            (0..len).map(move |i| first + ((start % u32::from(len.max(1))) as u16 + i) % len);
        randoms.into_iter().chain(walk)
    }
}

/// Four random bytes from the kernel (the time and the process id if it cannot say).
pub(super) fn random_u32() -> u32 {
    let mut bytes = [0u8; 4];
    match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)) {
        Ok(()) => u32::from_le_bytes(bytes),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            nanos ^ std::process::id()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_stops_below_the_ephemeral_ports_and_every_port_of_it_is_tried() {
        let r = Range::below_ephemeral(Some("32768\t60999\n"));
        assert_eq!((r.first, r.end), (10_000, 32_768));
        assert_eq!(Range::below_ephemeral(None), r);
        // A site whose ephemeral range starts low: nothing below it, only the kernel's choice.
        let empty = Range::below_ephemeral(Some("1024 65535"));
        assert_eq!(empty.tries(&mut random_u32).count(), 0);
        let small = Range {
            first: 20_000,
            end: 20_010,
        };
        let mut n = 0;
        let tries: Vec<u16> = small
            .tries(&mut || {
                n += 7;
                n
            })
            .collect();
        assert_eq!(tries.len(), RANDOM_TRIES + 10);
        assert!(tries.iter().all(|p| (20_000..20_010).contains(p)));
        let mut walk = tries[RANDOM_TRIES..].to_vec();
        walk.sort_unstable();
        assert_eq!(walk, (20_000..20_010).collect::<Vec<_>>());
    }

    /// A draw at the top of `u32` still walks the whole range, each port once.
    #[test]
    fn the_largest_draw_walks_every_port_once() {
        let r = Range::below_ephemeral(Some("32768 60999"));
        let mut walk: Vec<u16> = r.tries(&mut || u32::MAX).skip(RANDOM_TRIES).collect();
        walk.sort_unstable();
        assert_eq!(walk, (10_000..32_768).collect::<Vec<_>>());
    }

    /// The kernel's random bytes, not a constant: two draws agree once in 2^32.
    #[test]
    fn random_ports_are_random() {
        assert_ne!(random_u32(), random_u32());
    }
}
