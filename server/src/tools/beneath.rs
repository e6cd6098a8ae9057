//! Race-free file access under a root, for the file tools.
//!
//! The file tools run in the server (as the server's user, root in many
//! containers), while the tenant's own confined commands can change its
//! workspace at the same time. A path checked by [`crate::policy::workspace`]
//! and then opened by name could meanwhile have had a folder swapped for a
//! symlink to another tenant's workspace or the server's keys. So every open
//! here goes through `openat2(2)` from a descriptor of the root with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the kernel itself refuses any
//! resolution that leaves the root, whatever the tree looks like at that
//! instant. Folders a write needs are made one at a time the same way, and
//! ownership is handed over through the descriptors opened, never by name.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{Mode, OFlags, ResolveFlags};

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// A descriptor of `root` (canonical), the anchor of every open below it.
fn open_root(root: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// `abs` relative to `root`; both canonical. Refuses anything else.
fn relative<'a>(root: &Path, abs: &'a Path) -> io::Result<&'a Path> {
    let rel = abs
        .strip_prefix(root)
        .map_err(|_| io::Error::new(io::ErrorKind::PermissionDenied, "path is outside its root"))?;
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "path is not plain below its root",
        ));
    }
    Ok(rel)
}

fn rel_or_dot(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// Opens `abs` for reading; it must resolve below `root` at this instant.
pub fn open_read(root: &Path, abs: &Path) -> io::Result<File> {
    let dir = open_root(root)?;
    let rel = relative(root, abs)?;
    let fd = rustix::fs::openat2(
        &dir,
        rel_or_dot(rel),
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
        RESOLVE,
    )?;
    let file = File::from(fd);
    // A FIFO or device would block or misbehave; only regular files are read.
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "path is not a regular file",
        ));
    }
    Ok(file)
}

/// Reads a whole file below `root`, at most `max` bytes.
pub fn read(root: &Path, abs: &Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = open_read(root, abs)?;
    let len = file.metadata()?.len();
    if len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("file is too large to read ({len} bytes)"),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "file grew past the read limit",
        ));
    }
    Ok(bytes)
}

/// Reads at most the first `max` bytes of a file below `root`.
pub fn read_prefix(root: &Path, abs: &Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_read(root, abs)?.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Who should own what a write creates (the tenant's sandbox uid on a root
/// server), applied through the descriptors.
pub type Owner = Option<(u32, u32)>;

fn hand_over(fd: &OwnedFd, owner: Owner) {
    if let Some((uid, gid)) = owner {
        let ids = (
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(gid)),
        );
        if let Err(e) = rustix::fs::fchown(fd, ids.0, ids.1) {
            tracing::warn!(error = %e, "could not hand a workspace file to the sandbox uid");
        }
    }
}

/// Writes `bytes` to `abs` below `root` (created or truncated, mode 0644),
/// first making missing folders when `create_parents` (mode 0755), each
/// opened beneath the root; what it creates goes to `owner`.
pub fn write(
    root: &Path,
    abs: &Path,
    bytes: &[u8],
    create_parents: bool,
    owner: Owner,
) -> io::Result<()> {
    use std::io::Write;
    let rel = relative(root, abs)?;
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path names no file"))?;
    let mut dir = open_root(root)?;
    if let Some(parent) = rel.parent() {
        for part in parent.components() {
            let Component::Normal(part) = part else {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "path is not plain below its root",
                ));
            };
            let opened = rustix::fs::openat2(
                &dir,
                part,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                RESOLVE,
            );
            dir = match opened {
                Ok(fd) => fd,
                Err(rustix::io::Errno::NOENT) if create_parents => {
                    rustix::fs::mkdirat(&dir, part, Mode::from_raw_mode(0o755))?;
                    let fd = rustix::fs::openat2(
                        &dir,
                        part,
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                        Mode::empty(),
                        RESOLVE,
                    )?;
                    hand_over(&fd, owner);
                    fd
                }
                Err(rustix::io::Errno::NOENT) => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        "parent folder does not exist",
                    ))
                }
                Err(e) => return Err(e.into()),
            };
        }
    }
    let fd = rustix::fs::openat2(
        &dir,
        name,
        OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::TRUNC
            | OFlags::CLOEXEC
            | OFlags::NOCTTY
            | OFlags::NONBLOCK,
        Mode::from_raw_mode(0o644),
        RESOLVE,
    )?;
    let mut file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "path is not a regular file",
        ));
    }
    file.write_all(bytes)?;
    let fd: OwnedFd = file.into();
    hand_over(&fd, owner);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "outside-secret").unwrap();
        std::fs::write(ws.join("sub/own.txt"), "own").unwrap();
        (dir, ws, outside)
    }

    #[test]
    fn reads_and_writes_below_the_root() {
        let (_d, ws, _o) = tree();
        assert_eq!(read(&ws, &ws.join("sub/own.txt"), 100).unwrap(), b"own");
        write(&ws, &ws.join("a/b/c.txt"), b"deep", true, None).unwrap();
        assert_eq!(std::fs::read(ws.join("a/b/c.txt")).unwrap(), b"deep");
        write(&ws, &ws.join("sub/own.txt"), b"replaced", false, None).unwrap();
        assert_eq!(std::fs::read(ws.join("sub/own.txt")).unwrap(), b"replaced");
        let e = write(&ws, &ws.join("missing/x.txt"), b"x", false, None).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let e = read(&ws, &ws.join("sub/own.txt"), 3)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // A link that stays below the root is followed.
        std::os::unix::fs::symlink("sub/own.txt", ws.join("inner-link")).unwrap();
        assert_eq!(read(&ws, &ws.join("inner-link"), 100).unwrap(), b"replaced");
    }

    #[test]
    fn a_link_out_of_the_root_is_refused_at_open_whatever_the_check_saw() {
        let (_d, ws, outside) = tree();
        // The checked path was a plain folder; by the time of the open it is
        // a link out (the race the tenant's terminal could win).
        std::os::unix::fs::symlink(&outside, ws.join("swapped")).unwrap();
        let e = read(&ws, &ws.join("swapped/secret.txt"), 100).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{e}");
        let e = write(&ws, &ws.join("swapped/planted.txt"), b"x", true, None).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{e}");
        assert!(!outside.join("planted.txt").exists());
        // An absolute link and a final-component link are refused too.
        std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("abs-link")).unwrap();
        assert!(read(&ws, &ws.join("abs-link"), 100).is_err());
        assert!(write(&ws, &ws.join("abs-link"), b"x", false, None).is_err());
        assert_eq!(
            std::fs::read(outside.join("secret.txt")).unwrap(),
            b"outside-secret"
        );
        // `..` in the argument never reaches here, and is refused if it does.
        assert!(read(&ws, &ws.join("../outside/secret.txt"), 100).is_err());
        assert!(read(&ws, &outside.join("secret.txt"), 100).is_err());
    }

    #[test]
    fn special_files_are_not_read() {
        let (_d, ws, _o) = tree();
        let fifo = ws.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(read(&ws, &fifo, 100).is_err());
        assert!(read(&ws, &ws, 100).is_err());
    }
}
