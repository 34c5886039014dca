//! One `--container-mounts` entry, in pyxis's spelling, which every runtime is given in its own.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// One `--container-mounts` entry: `SRC[:DST[:ro]]`, pyxis's spelling; DST is SRC when left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    pub(crate) src: PathBuf,
    pub(crate) dst: PathBuf,
    pub(crate) read_only: bool,
}

impl Mount {
    /// The same host path at the same path inside the image, writable.
    pub(crate) fn same_path(path: &Path) -> Self {
        Self {
            src: path.to_owned(),
            dst: path.to_owned(),
            read_only: false,
        }
    }
}

impl FromStr for Mount {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split(':').collect();
        let (src, dst, flag) = match parts.as_slice() {
            [src] => (*src, *src, None),
            [src, dst] => (*src, *dst, None),
            [src, dst, flag] => (*src, *dst, Some(*flag)),
            _ => {
                return Err(format!(
                    "`{text}` has more than two `:`; write SRC:DST or SRC:DST:ro"
                ));
            }
        };
        let read_only = match flag {
            None | Some("rw") => false,
            Some("ro") => true,
            Some(other) => {
                return Err(format!(
                    "`{text}` ends in `:{other}`; the flags are `ro` (read-only) and `rw`"
                ));
            }
        };
        for (what, path) in [("source", src), ("destination", dst)] {
            if !path.starts_with('/') {
                return Err(format!(
                    "`{text}`: the {what} `{path}` is not an absolute path; the same path must mean the same directory on every node"
                ));
            }
        }
        Ok(Self {
            src: PathBuf::from(src),
            dst: PathBuf::from(dst),
            read_only,
        })
    }
}

impl fmt::Display for Mount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.src.display(), self.dst.display())?;
        if self.read_only {
            f.write_str(":ro")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_are_pyxis_spelling_and_refuse_what_is_ambiguous() {
        let m: Mount = "/a:/b:ro".parse().unwrap();
        assert_eq!(m.to_string(), "/a:/b:ro");
        assert_eq!("/a".parse::<Mount>().unwrap().to_string(), "/a:/a");
        for bad in ["a:/b", "/a:b", "/a:/b:rx", "/a:/b:ro:x"] {
            let e = bad.parse::<Mount>().unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }
}
