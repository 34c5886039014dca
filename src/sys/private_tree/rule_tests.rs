//! The private tree's rules on their own: the owner and mode checks on a directory's status,
//! the accepted owners, what `check` refuses and what errors say (each case one a mutant of
//! `private_tree` got past before; docs/benchmarks.md, "Mutation testing").

use super::*;
use std::os::unix::fs::PermissionsExt;

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The name is shown beside the number where one is known, and the `nobody` hint only for
/// `nobody`.
#[test]
fn an_insecure_path_names_its_owner_and_only_nobody_gets_the_hint() {
    assert_eq!(owner_name(0), "uid 0 (root)");
    assert_eq!(owner_name(4_241_000), "uid 4241000");
    let insecure = |owner| Insecure {
        path: PathBuf::from("/p"),
        owner,
        mode: 0o40775,
        why: "is open".into(),
    };
    assert_eq!(
        insecure(4_241_000).to_string(),
        "`/p` (owner uid 4241000, mode 0775) is open"
    );
    assert!(
        insecure(NOBODY)
            .to_string()
            .contains(TRUST_UNVERIFIED_OWNER)
    );
}

/// [`TRUST_UNVERIFIED_OWNER`]'s owners count as the user's, and no other. (The accepted
/// list is the process's: this test is the only one that sets it, to an id nothing else
/// uses.)
#[test]
fn an_accepted_owner_counts_as_the_users() {
    accept_owners(vec![4_242_000]);
    assert_eq!(accepted_owners(), [4_242_000]);
    assert!(is_mine(4_242_000));
    assert!(!is_mine(4_242_001));
    assert!(!is_mine(NOBODY));
}

/// The owner and mode rules on their own, on a real directory's status with its owner and
/// mode set as each case needs (no other user needed).
#[test]
fn ancestors_and_tree_directories_are_judged_by_owner_and_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let real = nix::sys::stat::stat(tmp.path()).unwrap();
    let as_if = |uid: u32, mode: u32| {
        let mut st = real;
        st.st_uid = uid;
        st.st_mode = (real.st_mode & SFlag::S_IFMT.bits()) | mode;
        st
    };
    let p = tmp.path();
    let (other, accepted) = (4_242_010, 4_242_000);
    accept_owners(vec![accepted]);
    // Root's or the user's, writable by no one else: safe.
    assert!(check_ancestor(p, &as_if(0, 0o755)).is_ok());
    assert!(check_ancestor(p, &as_if(me(), 0o700)).is_ok());
    // An accepted owner's counts as the user's (and is no root: no sticky pass for it).
    assert!(check_ancestor(p, &as_if(accepted, 0o755)).is_ok());
    assert!(check_ancestor(p, &as_if(accepted, 0o1777)).is_err());
    // Root's sticky and open (/tmp): safe; anyone else's sticky and open: not.
    assert!(check_ancestor(p, &as_if(0, 0o1777)).is_ok());
    let err = check_ancestor(p, &as_if(other, 0o1777)).unwrap_err();
    assert!(err.why.starts_with("belongs to another user"), "{err}");
    // Open to the group or to all, without the sticky bit: refused, even root's.
    for mode in [0o775, 0o757, 0o2775, 0o777] {
        let err = check_ancestor(p, &as_if(0, mode)).unwrap_err();
        assert!(err.why.starts_with("can be written by others"), "{mode:o}");
    }
    // Only readable by others: fine for an ancestor.
    assert!(check_ancestor(p, &as_if(0, 0o555)).is_ok());
    // The tree itself: the user's (or accepted), private.
    assert!(check_own_dir(p, &as_if(me(), 0o700)).is_ok());
    assert!(check_own_dir(p, &as_if(accepted, 0o755)).is_ok());
    let err = check_own_dir(p, &as_if(other, 0o700)).unwrap_err();
    assert!(err.why.starts_with("belongs to another user"), "{err}");
    for mode in [0o720, 0o702, 0o1777] {
        let err = check_own_dir(p, &as_if(me(), mode)).unwrap_err();
        assert!(err.why.starts_with("can be written by others"), "{mode:o}");
    }
    // A file is no directory, for either.
    let file = tmp.path().join("f");
    std::fs::write(&file, "").unwrap();
    let st = nix::sys::stat::stat(&file).unwrap();
    assert!(check_ancestor(&file, &st).unwrap_err().why == "is not a directory");
    assert!(check_own_dir(&file, &st).unwrap_err().why == "is not a directory");
}

/// `check` makes nothing and refuses what `open_root` would.
#[test]
fn check_refuses_a_missing_or_open_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    assert!(matches!(
        check(&missing),
        Err(TreeError::Io {
            errno: Errno::ENOENT,
            ..
        })
    ));
    assert!(!missing.exists());
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    chmod(&open, 0o777);
    let err = check(&open).unwrap_err().to_string();
    assert!(err.contains("can be written by others"), "{err}");
    chmod(&open, 0o700);
    assert!(check(&open).is_ok());
}

/// A directory of the tree that is already private is left as it is (a set-group-id bit
/// inherited from a project directory included); only one readable by others is closed.
#[test]
fn a_private_tree_directory_keeps_its_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = PrivateDir::open_root(&tmp.path().join("s")).unwrap();
    let sub = tmp.path().join("s/sub");
    std::fs::create_dir(&sub).unwrap();
    chmod(&sub, 0o2700);
    tree.dir("sub").unwrap();
    let mode = std::fs::metadata(&sub).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o2700);
}
