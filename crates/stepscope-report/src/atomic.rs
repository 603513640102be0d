//! Writing an output file whole or not at all.
//!
//! Every file stepscope writes goes to a hidden temporary file beside its destination
//! (`.<name>.<random>.partial`, so dataset engines and folder scans skip it) and is renamed
//! over the destination only once it is complete and flushed. A failed or interrupted write
//! leaves the destination as it was — an earlier report, or nothing — never half a file;
//! the temporary file is removed on failure (and by the OS-level rename on success).
//! A destination that is a symbolic link is replaced by the new file, not written through,
//! so a link pointing at a trace cannot turn an output into an overwrite of that trace.

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
    let folder = folder_of(path);
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let temporary = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
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
    fn a_symlink_destination_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("trace.json");
        std::fs::write(&target, b"trace").unwrap();
        let link = dir.path().join("out.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_bytes(&link, b"export").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"trace");
        assert_eq!(std::fs::read(&link).unwrap(), b"export");
        assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
    }

    #[test]
    fn a_bare_name_is_written_in_the_current_folder_s_terms() {
        assert_eq!(folder_of(Path::new("x.html")), PathBuf::from("."));
        assert_eq!(folder_of(Path::new("a/x.html")), PathBuf::from("a"));
    }
}
