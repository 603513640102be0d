//! Writing an output file whole or not at all.
//!
//! Every file stepscope writes goes to a hidden temporary file beside its destination
//! (`.<name>.<random>.partial`, so dataset engines and folder scans skip it) and is renamed
//! over the destination only once it is complete and flushed. A failed or interrupted write
//! leaves the destination as it was — an earlier report, or nothing — never half a file;
//! the temporary file is removed on failure (and by the OS-level rename on success).
//! A destination that is a symbolic link to a file is written through: the file it points
//! to is replaced the same way (callers refuse outputs that resolve to an input first). A
//! destination that is not a regular file — `/dev/stdout`, `/dev/null`, a FIFO — is a
//! stream, not a file to replace: it is written in place, as any Unix tool would.

use crate::ReportError;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes `path` through `fill`, atomically (see the module doc). The folder must exist.
///
/// # Errors
///
/// The temporary file cannot be created, `fill` fails, or the rename fails; the error names
/// `path`.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), ReportError> {
    let error = |source: std::io::Error| ReportError::Write {
        path: path.to_owned(),
        source,
    };
    let resolved;
    let path = match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => {
            return stream_into(path, fill).map_err(error);
        }
        Ok(meta) if meta.is_file() => {
            resolved = std::fs::canonicalize(path).map_err(error)?;
            resolved.as_path()
        }
        _ => path,
    };
    let folder = folder_of(path);
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let temporary = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .permissions(mode_for(path))
        .tempfile_in(&folder)
        .map_err(error)?;
    {
        let mut writer = BufWriter::new(temporary.as_file());
        fill(&mut writer).map_err(error)?;
        writer.flush().map_err(error)?;
    }
    temporary.as_file().sync_all().map_err(error)?;
    temporary.persist(path).map_err(|e| error(e.error))?;
    Ok(())
}

/// The mode a written file gets: a file replaced keeps its own; a new one is created as
/// `File::create` creates one (read-write for all, less the user's umask), not with the
/// owner-only mode of a temporary file.
#[cfg(unix)]
fn mode_for(path: &Path) -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).map_or_else(
        |_| std::fs::Permissions::from_mode(0o666),
        |meta| meta.permissions(),
    )
}

/// Writes into a stream that exists already (a device, a FIFO, a terminal).
fn stream_into(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    let mut writer = BufWriter::new(file);
    fill(&mut writer)?;
    writer.flush()
}

/// Writes `bytes` to `path` atomically.
///
/// # Errors
///
/// As [`write_with`].
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    write_with(path, |writer| writer.write_all(bytes))
}

/// The folder a relative or absolute file path lies in (`.` for a bare name).
fn folder_of(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn a_failed_fill_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        std::fs::write(&path, b"old").unwrap();
        let result = write_with(&path, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(result.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("report.html")]);
    }

    #[test]
    fn a_new_file_gets_the_umask_mode_and_a_replaced_file_keeps_its_own() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // What the user's umask gives a plain `File::create`.
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let new = dir.path().join("report.html");
        write_bytes(&new, b"new").unwrap();
        assert_eq!(mode(&new), mode(&plain));
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_bytes(&new, b"newer").unwrap();
        assert_eq!(mode(&new), 0o640);
    }

    #[test]
    fn a_symlink_destination_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report.html");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.path().join("latest.html");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_bytes(&link, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    }

    #[test]
    fn a_device_is_written_in_place_and_its_failure_is_an_error() {
        write_bytes(Path::new("/dev/null"), b"x").unwrap();
        let error = write_bytes(Path::new("/dev/full"), b"x").unwrap_err();
        assert!(error.to_string().contains("/dev/full"), "{error}");
        assert!(
            std::fs::metadata("/dev/full")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }

    #[test]
    fn a_bare_name_is_written_in_the_current_folder_s_terms() {
        assert_eq!(folder_of(Path::new("x.html")), PathBuf::from("."));
        assert_eq!(folder_of(Path::new("a/x.html")), PathBuf::from("a"));
    }
}
