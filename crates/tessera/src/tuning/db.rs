//! The tuning database: one JSON file in the cache directory holding the best plan found per
//! [`TuningKey`]. Readers read the file as it is (every write is an atomic rename of a complete
//! file); writers read, modify and write it under a lock file, so that processes tuning at
//! once never lose each other's entries. A file that does not read as a database is reported
//! once and replaced by the next write.
//!
//! The database follows the kernel cache's trust rules ([`tessera_jit::trust`]): its directory
//! (0700) and file (0600) must be the user's and writable by nobody else, and for the default
//! database so must the cache root. An untrusted or unusable database is not used, with one
//! warning: runs plan with the model and `tessera tune` does not store its result.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tessera_plan::Plan;

use crate::error::Error;

/// The version of the database file's format; a file of another version is rebuilt.
pub const DB_FORMAT: u32 = 1;

/// What a tuned plan is valid for: the same program text and sizes, backend, device,
/// arithmetic and Tessera version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuningKey {
    /// The program's name (for listing and `--forget`).
    pub program: String,
    /// blake3 of the program text and the type aliases `--set` replaced.
    pub program_hash: String,
    /// The grid, slowest axis first (the sizes the parameters gave).
    pub grid: Vec<usize>,
    /// The backend's name.
    pub backend: String,
    /// The device: CPU model and core count, or the GPU's name and compute units.
    pub device: String,
    /// Whether the plan is for exact (bitwise-reproducible) arithmetic.
    pub exact: bool,
    /// The Tessera version that tuned it.
    pub tessera_version: String,
}

/// A plan measured during tuning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// The plan in one line (`Plan::describe`).
    pub plan: String,
    /// Median GCells/s of its timed runs.
    pub gcells_per_s: f64,
}

/// The result of one tuning run, stored under its key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuningEntry {
    /// What the plan is valid for.
    pub key: TuningKey,
    /// The best plan, made for the key's grid.
    pub plan: Plan,
    /// The best plan as measured.
    pub best: Measured,
    /// The second best plan as measured, if there was one.
    pub runner_up: Option<Measured>,
    /// The backend's default (model) plan as measured: the baseline.
    pub baseline: Measured,
    /// The grid the candidates were timed at (the key's unless `--tune-size` changed it).
    pub timed_grid: Vec<usize>,
    /// Steps per timed run.
    pub steps: u64,
    /// Candidates timed.
    pub candidates: usize,
    /// When the entry was written, seconds since the Unix epoch.
    pub created_unix_seconds: u64,
}

/// The database file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DbFile {
    format: u32,
    entries: Vec<TuningEntry>,
}

/// The entries of a database and, when the file could not be read as one, why.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The entries (none when the file is missing or damaged).
    pub entries: Vec<TuningEntry>,
    /// Why the file was not used, when it exists but is damaged.
    pub damaged: Option<String>,
}

/// The tuning database in a directory.
#[derive(Clone, Debug)]
pub struct TuningDb {
    dir: PathBuf,
    /// The cache root the directory is in, checked too (the default database only).
    root: Option<PathBuf>,
}

impl TuningDb {
    /// The database in the cache directory (`TESSERA_CACHE_DIR`, as for the kernel cache).
    pub fn open_default() -> TuningDb {
        let root = tessera_jit::cache_dir();
        TuningDb {
            dir: root.join("tuning"),
            root: Some(root),
        }
    }

    /// The database in `dir`.
    pub fn in_dir(dir: &Path) -> TuningDb {
        TuningDb {
            dir: dir.to_path_buf(),
            root: None,
        }
    }

    /// Whether the database may be used: the cache root (of the default database), the
    /// directory and the file are the user's and writable by nobody else. When not, one warning
    /// per process says why and `false` is returned; a cache root that is not a directory is an
    /// error. With `create`, missing directories are created (0700).
    pub fn usable(&self, create: bool) -> Result<bool, Error> {
        if let Some(root) = &self.root {
            let missing =
                matches!(std::fs::metadata(root), Err(e) if e.kind() == io::ErrorKind::NotFound);
            if !create && missing {
                return Ok(true);
            }
            let usable = tessera_jit::trust::check_cache_root(root)
                .map_err(|e| Error::Usage(e.to_string()))?;
            if !usable {
                return Ok(false);
            }
        }
        let path = self.path();
        let why = if create || self.dir.exists() {
            tessera_jit::trust::check_private_dir(&self.dir)
                .err()
                .map(|why| format!("{}: {why}", self.dir.display()))
        } else {
            None
        };
        let why = why.or_else(|| {
            path.exists()
                .then(|| tessera_jit::trust::untrusted_reason(&path))
                .flatten()
                .map(|why| format!("{}: {why}", path.display()))
        });
        let Some(why) = why else {
            return Ok(true);
        };
        tessera_jit::trust::warn_once(
            "tuning-db",
            &format!(
                "the tuning database in {} is not used ({why}): runs use the model's plans and \
                 `tessera tune` does not store its result. To fix it, make the directory and \
                 file yours and private (`chmod 700` the directory, `chmod 600` the file), or \
                 set TESSERA_CACHE_DIR to a private directory",
                self.dir.display()
            ),
        );
        Ok(false)
    }

    /// The database file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(format!("tuning-v{DB_FORMAT}.json"))
    }

    /// Every entry; a damaged file gives none and says why (it is rebuilt by the next write).
    pub fn load(&self) -> Loaded {
        // A database that cannot be used holds nothing (the warning or the error of the kernel
        // cache says why).
        if !self.usable(false).unwrap_or(false) {
            return Loaded::default();
        }
        let path = self.path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Loaded::default(),
            Err(e) => return damaged(&path, &e.to_string()),
        };
        match serde_json::from_str::<DbFile>(&text) {
            Ok(file) if file.format == DB_FORMAT => Loaded {
                entries: file.entries,
                damaged: None,
            },
            Ok(file) => damaged(&path, &format!("format {} is not {DB_FORMAT}", file.format)),
            Err(e) => damaged(&path, &e.to_string()),
        }
    }

    /// The entry stored for exactly `key`, with a warning about a damaged file.
    pub fn lookup(&self, key: &TuningKey) -> (Option<TuningEntry>, Option<String>) {
        let loaded = self.load();
        let entry = loaded.entries.into_iter().find(|e| &e.key == key);
        (entry, loaded.damaged)
    }

    /// Changes the entries under the database's lock (read, `change`, atomic write); returns
    /// what `change` returns and the warning about a damaged file that was replaced.
    pub fn update<T>(
        &self,
        change: impl FnOnce(&mut Vec<TuningEntry>) -> T,
    ) -> Result<(T, Option<String>), Error> {
        if !self.usable(true)? {
            return Err(Error::Usage(format!(
                "the tuning database in {} is not used (see the warning above)",
                self.dir.display()
            )));
        }
        let lock_path = self.dir.join("tuning.lock");
        let _lock = tessera_jit::lock_file(&lock_path)
            .map_err(|(what, e)| self.failed(what, &lock_path, e))?;
        let mut loaded = self.load();
        let result = change(&mut loaded.entries);
        let file = DbFile {
            format: DB_FORMAT,
            entries: loaded.entries,
        };
        let text = serde_json::to_string_pretty(&file).expect("a database always serializes");
        tessera_io::write_text(&self.path(), &text)?;
        self.make_private(&self.path())?;
        Ok((result, loaded.damaged))
    }

    /// Stores `entry`, replacing the one of the same key.
    pub fn insert(&self, entry: TuningEntry) -> Result<Option<String>, Error> {
        let ((), warning) = self.update(|entries| {
            entries.retain(|e| e.key != entry.key);
            entries.push(entry);
        })?;
        Ok(warning)
    }

    /// Removes every entry of the program named `program`; returns how many there were.
    pub fn forget(&self, program: &str) -> Result<(usize, Option<String>), Error> {
        self.update(|entries| {
            let before = entries.len();
            entries.retain(|e| e.key.program != program);
            before - entries.len()
        })
    }

    /// Sets the mode of the freshly written database file to 0600 (the directory is private
    /// already, so nobody else could reach it meanwhile).
    fn make_private(&self, path: &Path) -> Result<(), Error> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| self.failed("make private", path, e))
    }

    /// The error for a failed file operation `what` on `path`.
    fn failed(&self, what: &str, path: &Path, error: io::Error) -> Error {
        Error::Usage(format!(
            "cannot {what} {} (tuning database): {error}",
            path.display()
        ))
    }
}

/// What [`TuningDb::load`] gives for a damaged file.
fn damaged(path: &Path, why: &str) -> Loaded {
    Loaded {
        entries: Vec::new(),
        damaged: Some(format!(
            "the tuning database {} is damaged ({why}); it is ignored and rebuilt by the next `tessera tune`",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Session;

    fn entry(program: &str, device: &str) -> TuningEntry {
        let session = Session::from_text(
            "grid [6, 7];\nfield u: f32;\nstage s over [1..5, 1..6] { u = u[-1, 0] + u[1, 0]; }\n",
            "p.tess",
            program,
            &[],
        )
        .unwrap();
        let cpu = crate::backend("cpu").unwrap();
        let plan = session.plan(cpu.as_ref(), &Default::default()).unwrap();
        let measured = |g| Measured {
            plan: plan.describe(),
            gcells_per_s: g,
        };
        TuningEntry {
            key: TuningKey {
                program: program.into(),
                program_hash: "hash".into(),
                grid: vec![6, 7],
                backend: "cpu".into(),
                device: device.into(),
                exact: false,
                tessera_version: "0.1.0".into(),
            },
            plan: plan.clone(),
            best: measured(2.0),
            runner_up: Some(measured(1.5)),
            baseline: measured(1.0),
            timed_grid: vec![6, 7],
            steps: 3,
            candidates: 4,
            created_unix_seconds: 1,
        }
    }

    #[test]
    fn entries_round_trip_and_replace_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let db = TuningDb::in_dir(dir.path());
        assert!(db.load().entries.is_empty() && db.load().damaged.is_none());
        let first = entry("a", "cpu x");
        assert_eq!(db.insert(first.clone()).unwrap(), None);
        assert_eq!(db.lookup(&first.key), (Some(first.clone()), None));
        let mut better = first.clone();
        better.best.gcells_per_s = 3.0;
        db.insert(better.clone()).unwrap();
        assert_eq!(db.load().entries, vec![better]);
    }

    #[test]
    fn a_key_that_differs_in_anything_finds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = TuningDb::in_dir(dir.path());
        let stored = entry("a", "cpu x");
        db.insert(stored.clone()).unwrap();
        let variants: [fn(&mut TuningKey); 6] = [
            |k| k.device = "cpu y".into(),
            |k| k.program_hash = "older".into(),
            |k| k.grid = vec![6, 8],
            |k| k.exact = true,
            |k| k.backend = "opencl".into(),
            |k| k.tessera_version = "0.0.9".into(),
        ];
        for change in variants {
            let mut key = stored.key.clone();
            change(&mut key);
            assert_eq!(db.lookup(&key).0, None, "{key:?}");
        }
    }

    #[test]
    fn writers_in_parallel_lose_no_entry() {
        let dir = tempfile::tempdir().unwrap();
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let db = TuningDb::in_dir(dir.path());
                let entry = entry(&format!("p{i}"), "cpu x");
                std::thread::spawn(move || {
                    for round in 0..5 {
                        let mut entry = entry.clone();
                        entry.steps = round;
                        db.insert(entry).unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let mut programs: Vec<String> = (TuningDb::in_dir(dir.path()).load().entries)
            .into_iter()
            .map(|e| e.key.program)
            .collect();
        programs.sort();
        assert_eq!(
            programs,
            (0..8).map(|i| format!("p{i}")).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_damaged_file_is_reported_ignored_and_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let db = TuningDb::in_dir(dir.path());
        for damage in ["{ not json", "{\"format\": 99, \"entries\": []}", ""] {
            std::fs::write(db.path(), damage).unwrap();
            let loaded = db.load();
            assert!(loaded.entries.is_empty());
            assert!(
                loaded.damaged.as_deref().unwrap().contains("is damaged"),
                "{damage}"
            );
            let stored = entry("a", "cpu x");
            let warning = db.insert(stored.clone()).unwrap();
            assert!(warning.is_some(), "the replaced file is reported");
            assert_eq!(db.lookup(&stored.key), (Some(stored), None));
        }
    }

    #[test]
    fn forget_removes_every_entry_of_a_program() {
        let dir = tempfile::tempdir().unwrap();
        let db = TuningDb::in_dir(dir.path());
        for (program, device) in [("a", "x"), ("a", "y"), ("b", "x")] {
            db.insert(entry(program, device)).unwrap();
        }
        assert_eq!(db.forget("a").unwrap(), (2, None));
        let left: Vec<String> = db
            .load()
            .entries
            .into_iter()
            .map(|e| e.key.program)
            .collect();
        assert_eq!(left, vec!["b".to_string()]);
    }

    fn set_mode(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_database_is_private_and_an_untrusted_one_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("tuning");
        let db = TuningDb::in_dir(&dir);
        let stored = entry("a", "cpu x");
        db.insert(stored.clone()).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&db.path()), 0o600);
        assert!(db.usable(false).unwrap());

        // A file others can write is not read, and not written either.
        set_mode(&db.path(), 0o666);
        assert!(!db.usable(false).unwrap());
        assert_eq!(db.lookup(&stored.key), (None, None));
        let error = db.insert(stored.clone()).unwrap_err();
        assert!(error.to_string().contains("not used"), "{error}");
        assert_eq!(error.exit_code(), 1);
        set_mode(&db.path(), 0o600);
        assert_eq!(db.lookup(&stored.key).0, Some(stored.clone()));

        // Nor is a directory its group can write.
        set_mode(&dir, 0o770);
        assert_eq!(db.lookup(&stored.key), (None, None));
        assert!(db.forget("a").is_err());
        set_mode(&dir, 0o700);
        assert_eq!(db.forget("a").unwrap(), (1, None));
    }
}
