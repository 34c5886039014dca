//! What root looks like from inside a user namespace. A container runtime that remaps ids
//! (pyxis `--container-remap-root`, Apptainer `--fakeroot`, Charliecloud, `unshare -r`) maps the
//! user to some id inside and leaves host root unmapped: every directory host root owns (`/`,
//! `/home`, a scratch root) then shows the kernel's overflow id (`nobody`, 65534), the same id
//! every other unmapped user's files show. An owner check inside can only tell such a directory
//! apart from the user's own, not root's from another user's.

use std::sync::OnceLock;

/// The id host root shows as in this process's user namespace: 0 outside any (or where root
/// is mapped to itself), the id it is mapped to, or the overflow id when it is not mapped.
pub(crate) fn root_shows_as() -> u32 {
    static SHOWN: OnceLock<u32> = OnceLock::new();
    *SHOWN.get_or_init(|| {
        let Ok(map) = std::fs::read_to_string("/proc/self/uid_map") else {
            return 0;
        };
        let overflow = std::fs::read_to_string("/proc/sys/kernel/overflowuid")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(65534);
        root_in(&map, overflow)
    })
}

/// Each line of `uid_map` is `INSIDE OUTSIDE COUNT`.
fn ranges(uid_map: &str) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
    uid_map.lines().filter_map(|line| {
        let mut f = line.split_whitespace().map(|s| s.parse::<u64>().ok());
        Some((f.next()??, f.next()??, f.next()??))
    })
}

/// The id host root (outside id 0) has inside, given the namespace's `uid_map`.
fn root_in(uid_map: &str, overflow: u32) -> u32 {
    ranges(uid_map)
        .find(|&(_, outside, count)| outside == 0 && count > 0)
        .map_or(overflow, |(inside, _, _)| {
            u32::try_from(inside).unwrap_or(overflow)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_itself_outside_a_namespace_and_the_overflow_id_when_unmapped() {
        // The initial namespace: everything mapped to itself.
        assert_eq!(root_in("         0          0 4294967295\n", 65534), 0);
        // `unshare -r` as uid 1001, as pyxis' --container-remap-root does.
        let remapped = "         0       1001          1\n";
        assert_eq!(root_in(remapped, 65534), 65534);
        // A runtime that maps host root to an id of its own.
        assert_eq!(root_in("0 100000 65536\n1000 0 1\n", 65534), 1000);
        assert_eq!(root_in("", 65534), 65534);
    }
}
