//! The files beside a network file that naming conventions point to
//! (IBDM's `.hcas`, the tables of a NED network).

use std::path::{Path, PathBuf};

use super::{file_stem_name, TopoError};

/// The directory of the network file `path` and the file's stem. A bare
/// file name's directory is `.`: its parent is "", and reading the
/// directory "" fails.
pub(crate) fn dir_and_stem(path: &Path) -> (&Path, String) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    (dir, file_stem_name(path))
}

/// The forwarding tables `fdbs` and its index file `<fdbs>.ini` beside
/// it, when both exist.
pub(crate) fn table_files(fdbs: PathBuf) -> Option<(PathBuf, PathBuf)> {
    let mut ini = fdbs.clone().into_os_string();
    ini.push(".ini");
    let ini = PathBuf::from(ini);
    (fdbs.is_file() && ini.is_file()).then_some((fdbs, ini))
}

/// The files of `dir` with the extension `ext`, sorted.
pub(crate) fn with_extension(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, TopoError> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| TopoError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_lives_in_the_current_directory() {
        assert_eq!(
            dir_and_stem(Path::new("x.topo")),
            (Path::new("."), "x".to_string())
        );
        assert_eq!(
            dir_and_stem(Path::new("a/b/net.fdbs.ini")),
            (Path::new("a/b"), "net.fdbs".to_string())
        );
    }

    #[test]
    fn files_by_extension_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.hcas", "a.hcas", "a.topo", "c.hcas.ini"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let found = with_extension(dir.path(), "hcas").unwrap();
        let fdbs = dir.path().join("a.topo");
        assert_eq!(table_files(fdbs.clone()), None);
        std::fs::write(dir.path().join("a.topo.ini"), "").unwrap();
        assert_eq!(
            table_files(fdbs.clone()),
            Some((fdbs, dir.path().join("a.topo.ini")))
        );
        let names: Vec<_> = found.iter().map(|p| p.file_name().unwrap()).collect();
        assert_eq!(names, ["a.hcas", "b.hcas"]);
        assert!(with_extension(&dir.path().join("none"), "hcas").is_err());
    }
}
