//! The guard's unit tests over a fake disk: the shared examples table
//! (`tests/data/guard-examples.txt`), several operands, and a fuzz run of the invariant that a
//! line the tokenizer cannot judge is never denied.
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use super::*;

#[path = "../../tests/data/guard_examples.rs"]
mod guard_examples;
use guard_examples::examples;

const T: &str = "/t t";

/// A fake disk: managed worktrees `card-42` and `card-7`, a repository at `{T}/base` with
/// them and the aliases of `guard-examples.txt` (and `onpath`, `offpath`), the symlink
/// `{T}/link-to-42`, a directory `{T}/.hidden`, and a program `git-onpath` on the PATH.
struct Fake;

/// The aliases the examples table's repository has (`tests/integration/guard/end_to_end.rs` configures
/// the same ones with `git config`).
const ALIASES: &[(&str, &str)] = guard_examples::ALIASES;

/// Resolve `.` and `..` lexically (the fake has no symlinks on the way).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

fn at(rel: &str) -> PathBuf {
    Path::new(T).join(rel)
}

impl World for Fake {
    fn managed_worktree(&self, path: &Path) -> Option<Managed> {
        let mut p = normalize(path);
        if p == at("link-to-42") {
            p = at("base.worktrees/card-42");
        }
        (p == at("base.worktrees/card-42") || p == at("base.worktrees/card-7")).then(|| Managed {
            path: p,
            common_dir: at("base/.git"),
        })
    }
    fn repository(&self, at_: &Path, git_dir: bool) -> Option<Rc<Repository>> {
        let p = normalize(at_);
        let found = if git_dir {
            p == at("base/.git")
        } else {
            p.starts_with(at("base"))
        };
        found.then(|| {
            Rc::new(Repository::new(
                at("base/.git"),
                ["base", "base.worktrees/card-42", "base.worktrees/card-7"]
                    .map(at)
                    .to_vec(),
                true,
            ))
        })
    }
    fn is_symlink(&self, path: &Path) -> bool {
        normalize(path) == at("link-to-42")
    }
    fn alias(&self, repo: &Repository, name: &str) -> Option<String> {
        assert_eq!(repo.common_dir, at("base/.git"));
        let extra = [
            ("onpath", "worktree remove"),
            ("offpath", "worktree remove"),
        ];
        let mut all = ALIASES.iter().chain(&extra);
        let value = all.find(|(n, _)| n.eq_ignore_ascii_case(name))?.1;
        Some(value.to_owned())
    }
    fn git_program(&self, name: &str) -> bool {
        name == "onpath"
    }
    fn managed_of_base(&self, dir: &Path) -> Vec<PathBuf> {
        if normalize(dir) == at("base") {
            vec![at("base.worktrees/card-42"), at("base.worktrees/card-7")]
        } else {
            Vec::new()
        }
    }
    fn entries(&self, dir: &Path) -> Option<Vec<String>> {
        let p = normalize(dir);
        let names: &[&str] = if p == Path::new(T) {
            &["base", "base.worktrees", "link-to-42", ".hidden"]
        } else if p == at("base.worktrees") {
            &["card-42", "card-7"]
        } else if [
            at("base"),
            at("base.worktrees/card-42"),
            at("base.worktrees/card-7"),
            at("link-to-42"),
        ]
        .contains(&p)
        {
            &[".git", "src"]
        } else {
            return None;
        };
        Some(names.iter().map(|n| n.to_string()).collect())
    }
    fn managed_within(&self, dir: &Path) -> Vec<PathBuf> {
        if normalize(dir) == at("base.worktrees") {
            vec![at("base.worktrees/card-42"), at("base.worktrees/card-7")]
        } else {
            Vec::new()
        }
    }
}

fn run(line: &str) -> Vec<Denial> {
    judge_line(line, &at("base"), &Fake)
}

fn replacements(denials: &[Denial]) -> String {
    denials
        .iter()
        .map(|d| d.replacement.as_str())
        .collect::<Vec<_>>()
        .join(" && ")
}

#[test]
fn examples_table() {
    let table = examples(Path::new(T));
    let denied = table.iter().filter(|(_, r)| !r.is_empty()).count();
    assert!(
        denied >= 25 && table.len() - denied >= 25,
        "{denied} of {}",
        table.len()
    );
    let mut wrong = Vec::new();
    for (line, want) in &table {
        let got = replacements(&run(line));
        if got != *want {
            wrong.push(format!(
                "{line:?}\n   want {want:?}\n   got  {got:?} ({:?})",
                tokenize(line)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn multiple_operands_give_one_replacement_each() {
    let got = run("rm -rf '/t t/base.worktrees/card-42' /t\\ t/base.worktrees/card-7 '/t t/base.worktrees/card-42/'");
    assert_eq!(
        replacements(&got),
        "git kardwt remove --path '/t t/base.worktrees/card-42' --force && git kardwt remove --path '/t t/base.worktrees/card-7' --force"
    );
}

#[test]
fn a_git_program_on_the_path_wins_over_an_alias_of_its_name() {
    let p = "'/t t/base.worktrees/card-42'";
    assert_eq!(
        replacements(&run(&format!("git offpath {p}"))),
        format!("git kardwt remove --path {p}")
    );
    assert!(run(&format!("git onpath {p}")).is_empty());
    assert!(run(&format!("git -c alias.onpath=rmwt onpath {p}")).is_empty());
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
#[ignore = "fuzzer: make test-slow"]
fn fuzz_never_panics() {
    #[rustfmt::skip]
    const PIECES: &[&str] = &[
        "git", "rm", "-rf", "worktree", "remove", "prune", "cd", "-C", " ", " ", "\t", "\n",
        "'", "\"", "\\", "$", "(", ")", "{", "}", "`", ";", "&", "|", "<", ">", "#", "~", "*",
        "=", "GIT_DIR=", "/t t/base.worktrees/card-42", "card-42", "..", "/", "-", "--",
        "2>&1", "é", "\u{0}", "-f", "&&", "||", "\\\n", "<<", ">(", "-c", "sudo",
        "command", "exit", "--rec", "--git-dir=",
    ];
    let table = examples(Path::new(T));
    let mut denied = 0;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let n = (rng.next() % 24) as usize;
        // Half the lines are mutations of the examples (so denials happen), half noise.
        let mut line = if rng.next().is_multiple_of(2) {
            table[(rng.next() % table.len() as u64) as usize].0.clone()
        } else {
            String::new()
        };
        for _ in 0..if line.is_empty() { n } else { n % 3 } {
            let piece = if rng.next().is_multiple_of(8) {
                char::from_u32((rng.next() % 0x3000) as u32)
                    .unwrap_or('?')
                    .to_string()
            } else {
                PIECES[(rng.next() % PIECES.len() as u64) as usize].to_owned()
            };
            let at: Vec<usize> = line
                .char_indices()
                .map(|(i, _)| i)
                .chain([line.len()])
                .collect();
            line.insert_str(at[(rng.next() % at.len() as u64) as usize], &piece);
        }
        let denials = run(&line);
        // The invariant: a line the tokenizer cannot judge is never denied.
        assert!(
            tokenize(&line).is_ok() || denials.is_empty(),
            "{line:?} denied: {denials:?}"
        );
        denied += usize::from(!denials.is_empty());
        let bytes: Vec<u8> = (0..n * 3).map(|_| rng.next() as u8).collect();
        let _ = run(&String::from_utf8_lossy(&bytes));
    }
    assert!(denied > 1000, "only {denied} fuzzed lines were denied");
}
