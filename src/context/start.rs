//! What every command starts from, read once: the caller's directory, the global options, the
//! repository, and (on demand) the worktree root and the rules file.
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::cli::{GlobalArgs, Target};
use crate::config::{self, Config};
use crate::git::{self, Layout, Repo};
use crate::ground::card::CardId;
use crate::ground::error::{Code, Fail, Kind};
use crate::verify::{self, Entry};

pub(crate) struct Context {
    pub cwd: PathBuf,
    pub global: GlobalArgs,
    pub repo: Repo,
    /// The repository's store of cards, obtained once here and passed along.
    pub cards: crate::state::Cards,
    /// The rules as [`Context::rules`] last read them, with the path they were read from: read
    /// and decoded once per command, again only where the path changes (the bare layout's
    /// rules file is the base commit's, which a fetch moves).
    read: std::sync::Mutex<Option<(PathBuf, Rules)>>,
}

/// The configuration in force and where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    pub config: Config,
    /// The rules file read, or `None` when the default file is absent (defaults apply).
    pub file: Option<PathBuf>,
}

impl Context {
    pub(crate) fn new(global: GlobalArgs) -> Result<Context> {
        Context::anchored(global, None)
    }

    /// Like [`Context::new`], but when the caller stands outside any repository, find it from
    /// `anchor` (a `--path` argument), so `git kardwt remove --path P` works from any
    /// directory. Inside a repository the caller's own wins: a path that belongs elsewhere
    /// then fails verification (closed) instead of silently switching repositories.
    pub(crate) fn anchored(global: GlobalArgs, anchor: Option<&Path>) -> Result<Context> {
        let cwd = std::env::current_dir().context("could not read the current directory")?;
        Context::at(global, cwd, anchor)
    }

    /// [`Context::anchored`] as if started in `cwd` (absolute), without reading or changing
    /// the process's own directory: the runner commands act for a payload's `cwd`.
    pub(crate) fn at(global: GlobalArgs, cwd: PathBuf, anchor: Option<&Path>) -> Result<Context> {
        let repo = match (Repo::discover(&cwd), anchor) {
            (Ok(repo), _) => repo,
            (Err(err), None) => return Err(err),
            (Err(err), Some(p)) => {
                let abs = git::absolutize(&cwd.join(p));
                // The nearest existing directory: the path itself may be gone (prunable).
                match abs.ancestors().find(|a| a.is_dir()) {
                    Some(dir) => Repo::discover(dir)?,
                    None => return Err(err),
                }
            }
        };
        // A base whose git dir is elsewhere is remembered, so its linked worktrees find it.
        if repo.current.as_ref() == Some(&repo.base) && repo.git_dir_elsewhere() {
            crate::state::remember_base(&repo.common_dir, &repo.base);
        }
        Ok(Context {
            cwd,
            global,
            cards: crate::state::Cards::at(&repo.common_dir),
            repo,
            read: std::sync::Mutex::new(None),
        })
    }

    /// A path given on the command line, absolute against the caller's directory.
    pub(crate) fn resolve_cli_path(&self, p: &Path) -> PathBuf {
        git::absolutize(&self.cwd.join(p))
    }

    /// A path from git config, relative ones against the base (the project directory in the
    /// bare layout).
    fn resolve_config_path(&self, p: &str) -> PathBuf {
        git::absolutize(&self.repo.project_dir().join(p))
    }

    /// The worktree root: `--root`, else `kardwt.root`, else `<base>.worktrees`
    /// beside the base; in the bare layout the project directory, beside `.git`.
    pub(crate) fn root(&self) -> PathBuf {
        if let Some(r) = &self.global.root {
            return self.resolve_cli_path(r);
        }
        if let Some(r) = self
            .repo
            .config_string("kardwt.root")
            .filter(|r| !r.is_empty())
        {
            return self.resolve_config_path(&r);
        }
        if let Layout::Bare { project } = &self.repo.layout {
            return project.clone();
        }
        let base = &self.repo.base;
        let name = base
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        base.parent()
            .unwrap_or(base)
            .join(format!("{name}.worktrees"))
    }

    /// The rules file and whether it was named explicitly (in the bare layout the default is
    /// shown as `<base commit>:kardbrd.yml`).
    pub(crate) fn rules_path(&self) -> (PathBuf, bool) {
        if let Some(r) = &self.global.rules {
            return (self.resolve_cli_path(r), true);
        }
        if let Some(r) = self
            .repo
            .config_string("kardwt.rules")
            .filter(|r| !r.is_empty())
        {
            return (self.resolve_config_path(&r), true);
        }
        if self.repo.is_bare_layout() {
            let commit = self.base_commit().unwrap_or_else(|| "HEAD".into());
            return (PathBuf::from(format!("{commit}:kardbrd.yml")), false);
        }
        (self.repo.base.join("kardbrd.yml"), false)
    }

    /// Read and strictly decode the rules (exit 2 on any error). The file is data from the
    /// repository, read carefully: a default `kardbrd.yml` that is a symlink must resolve
    /// inside the base, and any rules file must be a regular file of at most
    /// [`MAX_RULES_BYTES`], checked before it is read.
    pub(crate) fn rules(&self) -> Result<Rules> {
        let (path, explicit) = self.rules_path();
        if let Ok(read) = self.read.lock() {
            if let Some((_, rules)) = read.as_ref().filter(|(from, _)| *from == path) {
                return Ok(rules.clone());
            }
        }
        let rules = self.read_rules(&path, explicit)?;
        if let Ok(mut read) = self.read.lock() {
            *read = Some((path, rules.clone()));
        }
        Ok(rules)
    }

    /// [`Context::rules`] read from `path` (named by the user when `explicit`).
    fn read_rules(&self, path: &Path, explicit: bool) -> Result<Rules> {
        let path = path.to_path_buf();
        if !explicit && self.repo.is_bare_layout() {
            return self.committed_rules();
        }
        let read = if explicit {
            path.clone()
        } else {
            match inside_base(&path, &self.repo.base)? {
                Some(resolved) => resolved,
                None => {
                    return Ok(Rules {
                        config: Config::default(),
                        file: None,
                    })
                }
            }
        };
        // The default file was resolved above: its last component must not become a symlink
        // in between (O_NOFOLLOW); a named file is followed wherever it leads.
        let text = read_rules_file(&path, &read, !explicit)?;
        Ok(Rules {
            config: config::decode(&path, &text)?,
            file: Some(path),
        })
    }

    /// The bare layout's rules: `kardbrd.yml` as committed in the base commit (see
    /// [`Context::base_commit`]), never a file of any tree; defaults when there is none.
    fn committed_rules(&self) -> Result<Rules> {
        let Some(commit) = self.base_commit() else {
            return Ok(Rules {
                config: Config::default(),
                file: None,
            });
        };
        let shown = PathBuf::from(format!("{commit}:kardbrd.yml"));
        let unfit = |e: anyhow::Error| {
            Fail::from(Refusal::RulesUnfit {
                path: shown.clone(),
                what: format!("{e:#}"),
            })
        };
        let bytes = self
            .repo
            .committed_file(&commit, "kardbrd.yml", MAX_RULES_BYTES)
            .map_err(unfit)?;
        let Some(bytes) = bytes else {
            return Ok(Rules {
                config: Config::default(),
                file: None,
            });
        };
        let text =
            String::from_utf8(bytes).map_err(|_| unfit(anyhow::anyhow!("it is not UTF-8 text")))?;
        Ok(Rules {
            config: config::decode(&shown, &text)?,
            file: Some(shown),
        })
    }

    /// The commit whose committed rules the bare layout reads: the base `add` has just fetched,
    /// else the last fetched base of `origin` (`refs/remotes/origin/HEAD`, else
    /// `refs/remotes/origin/<the branch HEAD names>`), else `HEAD`; `None` in an empty
    /// repository.
    pub(crate) fn base_commit(&self) -> Option<String> {
        if let Some((_, _, commit)) = self.repo.fetched.get() {
            return Some(commit.clone());
        }
        let dir = &self.repo.base;
        let tracking = crate::git::symbolic_ref(dir, "HEAD")
            .and_then(|h| h.strip_prefix("refs/heads/").map(str::to_owned))
            .map(|b| format!("refs/remotes/origin/{b}"));
        ["refs/remotes/origin/HEAD".to_owned()]
            .into_iter()
            .chain(tracking)
            .chain(["HEAD".to_owned()])
            .find_map(|r| crate::git::ref_commit(dir, &r))
    }

    /// Where shared files (`.env` links, `sharing.link`, `sharing.copy`, skills) come from,
    /// and whether that is a checkout (then only files git ignores are shared): the base, or
    /// in the bare layout the directory git config `kardwt.sharedFrom` names (relative to the
    /// project directory); `None` there when it names none: nothing is shared.
    pub(crate) fn shared_from(&self) -> Option<(PathBuf, bool)> {
        match self.repo.layout {
            Layout::Checkout => Some((self.repo.base.clone(), true)),
            Layout::Bare { .. } => self
                .repo
                .config_string("kardwt.sharedFrom")
                .filter(|d| !d.is_empty())
                .map(|d| (self.resolve_config_path(&d), false)),
        }
    }

    /// The commit committed helpers are trusted and checked at: the base's HEAD, or in the bare
    /// layout the base commit (a bare clone's own HEAD branch is not what fetches move).
    pub(crate) fn head_commit(&self) -> Option<String> {
        match self.repo.layout {
            Layout::Checkout => crate::git::head_oid(&self.repo.base),
            Layout::Bare { .. } => self.base_commit(),
        }
    }

    /// What hooks and `git kardwt env` are given as `KARDWT_BASE`: the base checkout, or in
    /// the bare layout the shared directory (empty when none is named: there is no checkout).
    pub(crate) fn base_shown(&self) -> PathBuf {
        match self.repo.layout {
            Layout::Checkout => self.repo.base.clone(),
            Layout::Bare { .. } => self.shared_from().unwrap_or_default().0,
        }
    }

    /// The directory kardwt's links point into ([`Context::shared_from`]'s, else the base),
    /// against which a link in a tree is judged kardwt's own.
    pub(crate) fn links_from(&self) -> PathBuf {
        self.shared_from()
            .map_or_else(|| self.repo.base.clone(), |(dir, _)| dir)
    }

    /// Where a card's worktree is: the one path its records name, else `<root>/card-<id>`.
    /// Two records claiming the card is malformed (exit 3).
    pub(crate) fn card_path(&self, entries: &[Entry], card: &CardId) -> Result<PathBuf> {
        let claims = verify::claims(entries, card.as_str());
        match claims.as_slice() {
            [] => Ok(self.root().join(card.dir_name())),
            [one] => Ok(one
                .linked
                .path
                .clone()
                .unwrap_or_else(|| self.root().join(card.dir_name()))),
            many => {
                let admins: Vec<String> = many
                    .iter()
                    .map(|e| e.linked.admin.display().to_string())
                    .collect();
                Err(Fail::from(Refusal::ManyRecords {
                    card: card.clone(),
                    admins,
                })
                .into())
            }
        }
    }

    /// The worktree a reading command targets: a card, `--path`, or the one the caller is in.
    pub(crate) fn target(
        &self,
        entries: &[Entry],
        target: &Target,
    ) -> Result<(PathBuf, Option<CardId>)> {
        if let Some(card) = &target.card {
            return Ok((self.card_path(entries, card)?, Some(card.clone())));
        }
        if let Some(p) = &target.path {
            // Its last component unresolved: a symlink there is refused, not followed.
            return Ok((git::absolutize_keep_last(&self.cwd.join(p)), None));
        }
        match &self.repo.current {
            Some(cur) => Ok((cur.clone(), None)),
            None => Err(Fail::from(Refusal::NoTarget).into()),
        }
    }
}

/// The most a rules file may hold: it is data, read carefully.
pub(super) const MAX_RULES_BYTES: u64 = 1 << 20;

/// The default rules file as it may be read: itself, or the target of a symlink that resolves
/// inside the base; `None` when there is none (defaults apply). A symlink leading out of the
/// base, or one that resolves nowhere, is a configuration error and nothing is read.
fn inside_base(path: &Path, base: &Path) -> Result<Option<PathBuf>, Fail> {
    let meta = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(Fail::from(Refusal::RulesUnread {
                path: path.to_owned(),
                error,
            }))
        }
    };
    if !meta.file_type().is_symlink() {
        return Ok(Some(path.to_path_buf()));
    }
    let resolved = std::fs::canonicalize(path).map_err(|error| {
        Fail::from(Refusal::RulesDangle {
            path: path.to_owned(),
            error,
        })
    })?;
    if !resolved.starts_with(base) {
        return Err(Fail::from(Refusal::RulesOutside {
            path: path.to_owned(),
            resolved,
        }));
    }
    Ok(Some(resolved))
}

/// The text of the rules file `shown` (read from `read`, which it resolves to): a regular file
/// of at most [`MAX_RULES_BYTES`] of UTF-8. The file is opened without blocking (a FIFO with
/// no writer), without following a final symlink when `nofollow`, checked with fstat, and
/// never read past the limit (`/dev/zero`).
fn read_rules_file(shown: &Path, read: &Path, nofollow: bool) -> Result<String, Fail> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let cannot = |what: String| {
        Fail::from(Refusal::RulesUnfit {
            path: shown.to_owned(),
            what,
        })
    };
    let mut flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    if nofollow {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(read)
        .map_err(|e| cannot(e.to_string()))?;
    let meta = file.metadata().map_err(|e| cannot(e.to_string()))?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(cannot(format!("it is {kind}")));
    }
    let too_big = || cannot(format!("it is larger than {MAX_RULES_BYTES} bytes (1 MiB)"));
    if meta.len() > MAX_RULES_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_RULES_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot(e.to_string()))?;
    if bytes.len() as u64 > MAX_RULES_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|e| {
        cannot(format!(
            "it is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Why no worktree or no rules could be had: which card, which target, which rules file.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    /// More than one record claims the card: their admin dirs.
    #[error("card {card} is claimed by more than one record: {}", admins.join(", "))]
    ManyRecords { card: CardId, admins: Vec<String> },
    /// Neither a card, `--path`, nor a worktree the command runs in.
    #[error("not inside a worktree: name a card or pass --path")]
    NoTarget,
    #[error("cannot read the rules file {}: {error}", path.display())]
    RulesUnread {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the rules file {} is a symlink that does not resolve: {error}", path.display())]
    RulesDangle {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "the rules file {} is a symlink to {}, outside the base; it is not read",
        path.display(),
        resolved.display()
    )]
    RulesOutside { path: PathBuf, resolved: PathBuf },
    /// The rules file is no regular file of UTF-8 text within the limit: `what` it is.
    #[error("cannot read the rules file {}: {what}", path.display())]
    RulesUnfit { path: PathBuf, what: String },
}

impl Kind for Refusal {
    fn code(&self) -> Code {
        match self {
            Refusal::ManyRecords { .. } => Code::Refused,
            _ => Code::Usage,
        }
    }
    fn hints(&self) -> Vec<String> {
        let hint = match self {
            Refusal::ManyRecords { .. } => {
                "remove the stray kardwt.toml by hand after checking \
                                            which worktree is the card's"
            }
            Refusal::NoTarget | Refusal::RulesUnread { .. } => return Vec::new(),
            Refusal::RulesDangle { .. } => "fix or remove the symlink",
            Refusal::RulesOutside { .. } => {
                "make kardbrd.yml a file of the repository, or name another file with --rules"
            }
            Refusal::RulesUnfit { .. } => "fix --rules or git config kardwt.rules",
        };
        vec![hint.into()]
    }
}
