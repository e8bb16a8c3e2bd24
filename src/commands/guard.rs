//! `git kardwt guard` (SPEC R-GUARD): the I/O edge of the agent command guard. Reads the
//! pending command (Claude Code's pre-tool-use JSON on stdin, or `--command`), asks the pure
//! rules in [`crate::guard`] about it, and answers a deny in the caller's format.
//!
//! Invariants: it writes nothing anywhere but stdout/stderr (no log, no lock), never runs the
//! command, and never fails loudly: unreadable, oversized or unexpected input is silence
//! (exit 0), so a broken payload can never block an agent's unrelated work; its own usage
//! errors are one warning line and exit 0 (see [`usage_error`]).
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::Result;
use serde::Serialize;

use crate::cli::{GuardArgs, GuardFormat};
use crate::git::repo::{self, Repo};
use crate::guard::{self, Denial, Managed, World};
use crate::state::record::Loaded;
use crate::verify::{self, Verdict};

/// Payloads larger than this are cut off, so they do not parse: silence. A 1 MiB command
/// line fits, with room for the payload's other fields.
const STDIN_CAP: u64 = (1 << 20) + (64 << 10);

pub fn run(args: &GuardArgs, out: &mut dyn Write) -> Result<i32> {
    let Some((command, payload_cwd)) = pending_command(args) else {
        return Ok(0);
    };
    let cwd = match args.cwd.clone().or(payload_cwd) {
        Some(dir) => repo::absolutize(&dir),
        None => match std::env::current_dir() {
            Ok(dir) => dir,
            Err(_) => return Ok(0),
        },
    };
    // Standing in the directory lets every lookup under it skip walking its depth again.
    let here = std::env::set_current_dir(&cwd).ok().map(|_| cwd.clone());
    let denials = guard::judge_line(&command, &cwd, &Disk::new(here));
    if denials.is_empty() {
        return Ok(0);
    }
    // git runs `git kardwt` by absolute path too, but names its exec path in the environment:
    // then `git kardwt` is how the caller reached it, and what it can run again.
    let invoked = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .filter(|_| std::env::var_os("GIT_EXEC_PATH").is_none());
    Ok(answer(&denials, args.format, invoked.as_deref(), out))
}

/// Is this argv (program name first) a `guard` command line? Only the global options
/// (`--root DIR`, `--rules FILE`) may come before the subcommand.
pub fn is_guard_argv(args: impl IntoIterator<Item = OsString>) -> bool {
    let mut args = args.into_iter().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--root" | "--rules") => {
                args.next();
            }
            Some(a) if a.starts_with("--root=") || a.starts_with("--rules=") => {}
            Some(a) => return a == "guard",
            None => return false,
        }
    }
    false
}

/// A usage error of `guard` itself (an unknown flag, an empty `--cwd`, …) never denies: nothing
/// on stdout, one warning line on stderr, exit 0. Returns the exit code.
pub fn usage_error(err: &clap::Error) -> i32 {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or_default().trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let mut why: String = first
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    if first.chars().count() > 200 {
        why.push('…');
    }
    let _ = writeln!(
        std::io::stderr(),
        "warning: git kardwt guard judged nothing: {why} (see git kardwt guard --help)"
    );
    0
}

/// The command line to judge and the payload's `cwd`, or `None` for silence.
fn pending_command(args: &GuardArgs) -> Option<(String, Option<PathBuf>)> {
    if let Some(command) = &args.command {
        return Some((command.clone(), None));
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        let _ = writeln!(
            std::io::stderr(),
            "hint: git kardwt guard reads a pre-tool-use JSON payload on stdin, or takes --command STR"
        );
        return None;
    }
    parse_payload(stdin.lock().take(STDIN_CAP))
}

/// Claude Code's `{"tool_name":"Bash","tool_input":{"command":…},"cwd":…}`; anything else
/// (not JSON, cut off by the cap, not the Bash tool, no string command) is `None`. Only the
/// first JSON value is read, so a caller that keeps stdin open cannot make the guard hang.
fn parse_payload(input: impl Read) -> Option<(String, Option<PathBuf>)> {
    let value: serde_json::Value = serde_json::Deserializer::from_reader(input)
        .into_iter()
        .next()?
        .ok()?;
    if value.get("tool_name")?.as_str()? != "Bash" {
        return None;
    }
    let command = value
        .get("tool_input")?
        .get("command")?
        .as_str()?
        .to_owned();
    let cwd = value
        .get("cwd")
        .and_then(|c| c.as_str())
        .filter(|c| !c.is_empty())
        .map(PathBuf::from);
    Some((command, cwd))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeAnswer<'a> {
    hook_specific_output: ClaudeDecision<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeDecision<'a> {
    hook_event_name: &'a str,
    permission_decision: &'a str,
    permission_decision_reason: String,
}

/// Print the deny and return the exit code. A Claude answer that cannot be written to stdout
/// is given as exit 2 with the reason on stderr instead, which Claude Code also takes as a
/// deny: a lost deny never allows.
fn answer(
    denials: &[Denial],
    format: GuardFormat,
    invoked: Option<&Path>,
    out: &mut dyn Write,
) -> i32 {
    let reason = denials
        .iter()
        .map(|d| d.reason.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let replacement = denials
        .iter()
        .map(|d| spelled(&d.replacement, invoked))
        .collect::<Vec<_>>()
        .join(" && ");
    match format {
        GuardFormat::Claude => {
            let answer = ClaudeAnswer {
                hook_specific_output: ClaudeDecision {
                    hook_event_name: "PreToolUse",
                    permission_decision: "deny",
                    permission_decision_reason: format!(
                        "denied by git kardwt guard: {reason}. Run instead: {replacement}"
                    ),
                },
            };
            let told = serde_json::to_string(&answer)
                .is_ok_and(|json| writeln!(out, "{json}").is_ok() && out.flush().is_ok());
            if told {
                return 0;
            }
            // SPEC §28.4, fail closed: exit 0 without the answer would allow the command;
            // exit 2 blocks it, with the reason on stderr as Claude Code reads it then.
            let _ = writeln!(
                std::io::stderr(),
                "denied by git kardwt guard: {reason}. Run instead: {replacement}"
            );
            2
        }
        GuardFormat::Codex | GuardFormat::Text => {
            let _ = write!(
                std::io::stderr(),
                "error: denied by git kardwt guard: {reason}\nhint: run instead: {replacement}\n"
            );
            2
        }
    }
}

/// A suggested `git kardwt …` command as the agent's shell can run it (SPEC §23.7): when this
/// process was started by absolute path (a hook that names the binary because the agent's
/// `PATH` may lack it), the suggestion names that path too (pure).
fn spelled(replacement: &str, invoked: Option<&Path>) -> String {
    match (replacement.strip_prefix("git kardwt "), invoked) {
        (Some(rest), Some(exe)) if exe.is_absolute() => {
            format!("{} {rest}", guard::shell_quote(&exe.to_string_lossy()))
        }
        _ => replacement.to_owned(),
    }
}

/// The world as the disk has it: repositories found with gix, worktrees verified the way every
/// other command verifies them (SPEC R-VERIFY). Reads only.
///
/// Linear time, whatever the depth of the directory: the process stands in the judged
/// directory, and a path under it goes to the kernel relative to it, so a lookup costs the
/// operand's length; directories are listed once, so a path that does not exist costs no
/// system call. Each repository is read once, and a worktree verified the first time a path
/// names it; a candidate path is matched by the admin dir its `.git` file names and by its
/// inode, never resolved component by component.
struct Disk {
    /// The directory the process stands in (canonical), when it could move there.
    here: Option<PathBuf>,
    /// Repositories by the worktrees dir a `.git` file named.
    by_admin_parent: Cache<PathBuf>,
    /// Repositories by the directory (or git dir: `true`) they were looked up from.
    by_dir: Cache<(PathBuf, bool)>,
    /// Every repository read, by canonical common dir.
    loaded: RefCell<HashMap<PathBuf, Rc<Known>>>,
    /// Directory listings as a tree (node 0 the directory the process stands in, node 1 the
    /// root): most operands of a long line do not exist, and a listing answers for all of them
    /// without a system call each.
    nodes: RefCell<Vec<Node>>,
    /// The last answer of [`Disk::kind`]: the rules ask about one path several times in a row.
    last_kind: RefCell<Option<(PathBuf, Option<Kind>)>>,
    /// Answers of [`World::managed_worktree`] by path.
    managed: RefCell<HashMap<PathBuf, Option<Managed>>>,
    /// Answers of [`World::git_program`] by name.
    programs: RefCell<HashMap<String, bool>>,
}

/// A directory as listed once.
struct Node {
    /// How to reach it: relative to the process's directory, or absolute.
    path: PathBuf,
    /// The node `..` leads to, once known.
    parent: Option<usize>,
    /// Its entries: what each is, and its node once made; `None` when it cannot be listed.
    entries: Option<HashMap<OsString, (Kind, Option<usize>)>>,
}

impl Node {
    fn new(path: PathBuf, parent: Option<usize>) -> Node {
        let entries = std::fs::read_dir(&path).ok().map(|list| {
            list.filter_map(|e| e.ok())
                .map(|e| {
                    let kind = match e.file_type() {
                        Ok(t) if t.is_symlink() => Kind::Symlink,
                        Ok(t) if t.is_dir() => Kind::Dir,
                        Ok(t) if t.is_file() => Kind::File,
                        _ => Kind::Unknown,
                    };
                    (e.file_name(), (kind, None))
                })
                .collect()
        });
        Node {
            path,
            parent,
            entries,
        }
    }
}

/// What a directory listing says a name is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Symlink,
    /// Something the listing cannot tell (ask the file system itself).
    Unknown,
}

/// Repositories found by some key; `None` where there is none.
type Cache<K> = RefCell<HashMap<K, Option<Rc<Known>>>>;

/// A worktree's recorded path and its directory's (device, inode).
type Identified = (PathBuf, (u64, u64));

/// One repository as read once.
struct Known {
    info: Rc<guard::Repository>,
    repo: Repo,
    entries: Vec<verify::Entry>,
    /// Index into `entries` by admin dir name.
    by_id: HashMap<OsString, usize>,
    /// Verdicts asked for so far, by admin dir name: for a managed worktree that verifies,
    /// its recorded path and its directory's (device, inode).
    verified: RefCell<HashMap<OsString, Option<Identified>>>,
}

impl Known {
    /// The managed worktree registered under the admin dir `id`, if it verifies (once).
    fn managed(&self, id: &OsStr) -> Option<Identified> {
        if let Some(found) = self.verified.borrow().get(id) {
            return found.clone();
        }
        let found = self.by_id.get(id).and_then(|&i| {
            let e = &self.entries[i];
            let (Loaded::Parsed(_), Some(path)) = (&e.record, &e.linked.path) else {
                return None;
            };
            let report = verify::verify(&self.repo, &self.entries, path, None);
            let meta = std::fs::metadata(&report.path).ok()?;
            (report.verdict == Verdict::Verified).then(|| (report.path, (meta.dev(), meta.ino())))
        });
        self.verified
            .borrow_mut()
            .insert(id.to_owned(), found.clone());
        found
    }
}

impl Disk {
    fn new(here: Option<PathBuf>) -> Disk {
        Disk {
            here: here.filter(|h| h.as_os_str().len() > 1),
            by_admin_parent: RefCell::default(),
            by_dir: RefCell::default(),
            loaded: RefCell::default(),
            nodes: RefCell::default(),
            last_kind: RefCell::default(),
            managed: RefCell::default(),
            programs: RefCell::default(),
        }
    }

    /// What `local` is according to its parent's listing: `None` when it does not exist.
    fn kind(&self, local: &Path) -> Option<Kind> {
        if let Some((path, kind)) = &*self.last_kind.borrow() {
            if path.as_os_str() == local.as_os_str() {
                return *kind;
            }
        }
        let kind = self.kind_uncached(local);
        *self.last_kind.borrow_mut() = Some((local.to_path_buf(), kind));
        kind
    }

    /// Walk `local` down the tree of listings, one component at a time (`..` goes back up the
    /// way it came): `None` when it does not exist, [`Kind::Unknown`] when only the file system
    /// can tell (through a symbolic link, an unreadable directory). Each directory is listed
    /// once, and a path costs one lookup per component, so `a1/x a2/x …` or `../x` cost no
    /// system call each.
    fn kind_uncached(&self, local: &Path) -> Option<Kind> {
        let bytes = local.as_os_str().as_bytes();
        let mut nodes = self.nodes.borrow_mut();
        if nodes.is_empty() {
            nodes.push(Node::new(PathBuf::from("."), None));
            nodes.push(Node::new(PathBuf::from("/"), Some(1)));
        }
        let mut at = usize::from(bytes.starts_with(b"/"));
        let components: Vec<&[u8]> = bytes
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty() && *c != b".")
            .collect();
        let Some((&last, dirs)) = components.split_last() else {
            return Some(Kind::Unknown);
        };
        if last == b".." {
            return Some(Kind::Unknown);
        }
        for &c in dirs {
            at = if c == b".." {
                match nodes[at].parent {
                    Some(up) => up,
                    None => {
                        let up = Node::new(nodes[at].path.join(".."), None);
                        nodes.push(up);
                        let id = nodes.len() - 1;
                        nodes[at].parent = Some(id);
                        id
                    }
                }
            } else {
                let name = OsStr::from_bytes(c);
                let Some(entries) = nodes[at].entries.as_ref() else {
                    return Some(Kind::Unknown);
                };
                match entries.get(name) {
                    None | Some((Kind::File, _)) => return None,
                    Some((Kind::Symlink | Kind::Unknown, _)) => return Some(Kind::Unknown),
                    Some((Kind::Dir, Some(child))) => *child,
                    Some((Kind::Dir, None)) => {
                        let child = Node::new(nodes[at].path.join(name), Some(at));
                        nodes.push(child);
                        let id = nodes.len() - 1;
                        if let Some(entry) =
                            nodes[at].entries.as_mut().and_then(|e| e.get_mut(name))
                        {
                            entry.1 = Some(id);
                        }
                        id
                    }
                }
            };
        }
        match &nodes[at].entries {
            Some(entries) => entries.get(OsStr::from_bytes(last)).map(|e| e.0),
            None => Some(Kind::Unknown),
        }
    }

    /// `path` as the kernel should get it: relative to `here` when it lies under it.
    fn local<'p>(&self, path: &'p Path) -> &'p Path {
        let Some(here) = &self.here else { return path };
        let (p, h) = (path.as_os_str().as_bytes(), here.as_os_str().as_bytes());
        match p.strip_prefix(h) {
            Some([]) => Path::new("."),
            Some([b'/', rest @ ..]) => {
                let start = rest.iter().take_while(|&&b| b == b'/').count();
                match &rest[start..] {
                    [] => Path::new("."),
                    rest => Path::new(OsStr::from_bytes(rest)),
                }
            }
            _ => path,
        }
    }

    /// Read `repo` once: its worktrees and their records (verified only when asked about).
    fn load(&self, repo: Repo) -> Rc<Known> {
        if let Some(known) = self.loaded.borrow().get(&repo.common_dir) {
            return known.clone();
        }
        let entries = verify::scan(&repo).unwrap_or_default();
        let info = guard::Repository::new(
            repo.common_dir.clone(),
            std::iter::once(repo.base.clone())
                .chain(entries.iter().filter_map(|e| e.linked.path.clone()))
                .collect(),
            entries
                .iter()
                .any(|e| e.linked.prunable && matches!(e.record, Loaded::Parsed(_))),
        );
        let known = Rc::new(Known {
            info: Rc::new(info),
            by_id: entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| Some((e.linked.admin.file_name()?.to_owned(), i)))
                .collect(),
            entries,
            verified: RefCell::default(),
            repo,
        });
        self.loaded
            .borrow_mut()
            .insert(known.info.common_dir.clone(), known.clone());
        known
    }

    /// [`World::managed_worktree`] without the memo.
    fn managed_uncached(&self, path: &Path) -> Option<Managed> {
        let local = self.local(path);
        let meta = std::fs::metadata(local).ok()?;
        if !meta.is_dir() {
            return None;
        }
        let admin = repo::read_dot_git(local)?;
        let (parent, id) = (admin.parent()?.to_path_buf(), admin.file_name()?);
        let cached = self.by_admin_parent.borrow().get(&parent).cloned();
        let known = match cached {
            Some(known) => known,
            None => {
                let known = Repo::discover(&repo::absolutize(path))
                    .ok()
                    .map(|repo| self.load(repo));
                self.by_admin_parent
                    .borrow_mut()
                    .insert(parent, known.clone());
                known
            }
        }?;
        let (recorded, identity) = known.managed(id)?;
        (identity == (meta.dev(), meta.ino())).then(|| Managed {
            path: recorded,
            common_dir: known.info.common_dir.clone(),
        })
    }

    /// The repository found from the existing directory `at` (or the git dir `at`).
    fn find(&self, at: &Path, git_dir: bool) -> Option<Rc<Known>> {
        let local = self.local(at);
        if !std::fs::metadata(local).is_ok_and(|m| m.is_dir()) {
            return None;
        }
        // `--git-dir` must name a git directory itself: git does not search from it.
        if git_dir
            && !(local.join("HEAD").is_file()
                && (local.join("objects").is_dir() || local.join("commondir").is_file()))
        {
            return None;
        }
        let start = std::fs::canonicalize(local).ok()?;
        let repo = Repo::discover(&start).ok()?;
        Some(self.load(repo))
    }
}

impl World for Disk {
    fn managed_worktree(&self, path: &Path) -> Option<Managed> {
        // Most paths do not exist: the listings say so before anything is hashed or stored.
        let local = self.local(path);
        if matches!(self.kind(local), None | Some(Kind::File)) {
            return None;
        }
        if let Some(found) = self.managed.borrow().get(local) {
            return found.clone();
        }
        let found = self.managed_uncached(path);
        self.managed
            .borrow_mut()
            .insert(local.to_path_buf(), found.clone());
        found
    }

    fn repository(&self, at: &Path, git_dir: bool) -> Option<Rc<guard::Repository>> {
        let key = (at.to_path_buf(), git_dir);
        let cached = self.by_dir.borrow().get(&key).cloned();
        let known = match cached {
            Some(known) => known,
            None => {
                let known = self.find(at, git_dir);
                self.by_dir.borrow_mut().insert(key, known.clone());
                known
            }
        };
        known.map(|k| k.info.clone())
    }

    fn managed_within(&self, dir: &Path) -> Vec<PathBuf> {
        let local = self.local(dir);
        if matches!(self.kind(local), None | Some(Kind::File)) {
            return Vec::new();
        }
        // A worktree itself is judged by `managed_worktree`; only plain directories are looked
        // into, one level deep, where the worktree root keeps `card-<id>`.
        if local.join(".git").exists() {
            return Vec::new();
        }
        let Ok(children) = std::fs::read_dir(local) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = children
            .filter_map(|c| c.ok())
            .filter(|c| c.path().join(".git").is_file())
            .filter_map(|c| self.managed_worktree(&dir.join(c.file_name())))
            .map(|m| m.path)
            .collect();
        found.sort();
        found
    }

    fn alias(&self, repo: &guard::Repository, name: &str) -> Option<String> {
        // Read with gix, as git reads it: every file of the cascade, includes followed.
        let loaded = self.loaded.borrow();
        let known = loaded.get(&repo.common_dir)?;
        known.repo.config_string(&format!("alias.{name}"))
    }

    fn git_program(&self, name: &str) -> bool {
        if let Some(&found) = self.programs.borrow().get(name) {
            return found;
        }
        // git searches the PATH it runs with (its exec path first, which `git kardwt` is
        // handed too); anything there but a directory stops the alias from running.
        let path = std::env::var_os("PATH").unwrap_or_default();
        let found = std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(format!("git-{name}"))).is_ok_and(|m| !m.is_dir())
        });
        self.programs.borrow_mut().insert(name.to_owned(), found);
        found
    }

    fn is_symlink(&self, path: &Path) -> bool {
        let local = self.local(path);
        match self.kind(local) {
            None | Some(Kind::Dir | Kind::File) => false,
            Some(Kind::Symlink) => true,
            Some(Kind::Unknown) => {
                std::fs::symlink_metadata(local).is_ok_and(|m| m.file_type().is_symlink())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_name_the_binary_as_it_was_reached() {
        let r = "git kardwt remove --path '/w/card-1'";
        assert_eq!(spelled(r, Some(Path::new("git-kardwt"))), r);
        assert_eq!(spelled(r, None), r);
        assert_eq!(
            spelled(r, Some(Path::new("/opt/k bin/git-kardwt"))),
            "'/opt/k bin/git-kardwt' remove --path '/w/card-1'"
        );
    }

    #[test]
    fn payloads_other_than_a_bash_command_are_silence() {
        assert_eq!(
            parse_payload(&br#"{"tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/x"}"#[..]),
            Some(("ls".into(), Some("/x".into())))
        );
        // A caller that never closes stdin: the first value is enough.
        let open =
            br#" {"tool_name":"Bash","tool_input":{"command":"ls"}}"#.chain(std::io::repeat(b' '));
        assert_eq!(parse_payload(open), Some(("ls".into(), None)));
        for bad in [
            &br#"{"tool_name":"Edit","tool_input":{"command":"ls"}}"#[..],
            br#"{"tool_name":"Bash","tool_input":{"command":1}}"#,
            br#"{"tool_name":"Bash"}"#,
            br#"[1,2]"#,
            b"not json",
            b"\xff\xfe",
            b"",
        ] {
            assert_eq!(
                parse_payload(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn claude_answer_has_the_documented_shape() {
        let mut out = Vec::new();
        let d = Denial {
            reason: "r".into(),
            replacement: "git kardwt gc --apply".into(),
        };
        assert_eq!(answer(&[d], GuardFormat::Claude, None, &mut out), 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"denied by git kardwt guard: r. Run instead: git kardwt gc --apply\"}}\n"
        );
    }
}
