//! pre-push checked against git itself: generated histories and refs of every kind (branches
//! with commits that add, rename, nest or delete a file, side branches, lightweight and
//! annotated tags naming blobs, trees and commits, notes refs, several refs in one push)
//! carrying the bytes of the linked `.env` or of a file in a linked directory as it is now or
//! as it was before an edit, or harmless bytes. The oracle is `git rev-list --objects` of the
//! pushed refs less what the remote has, run here: the push is blocked exactly when an object
//! git would send holds shared bytes, and the remote never holds any. The seed is printed;
//! `KARDWT_SEED=<n>` replays it and `KARDWT_CASES=<n>` runs more cases.
use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::pre_push::objects::{blob, mktree, origin_has};
use crate::support::push::{head, push};
use crate::support::{Rng, TestRepo, COMMAND_TIMEOUT};

/// How many generated repositories the default suite runs (each a few pushes).
const DEFAULT_CASES: u64 = 15;

/// One generated repository: the card's tree and what kardwt shared into it so far.
struct World {
    repo: TestRepo,
    tree: PathBuf,
    /// Every content kardwt shared into the tree (linked `.env` versions, linked files).
    shared: Vec<String>,
    /// The base's `.env` now.
    env: String,
    /// The linked directory's files, and whether each was edited since the card was added
    /// (once at most: kardwt remembers the version it linked and judges the one there now).
    data: Vec<(String, bool)>,
    /// A counter for unique names and contents.
    n: usize,
    case: u64,
}

impl World {
    fn new(rng: &mut Rng, case: u64) -> World {
        let repo = TestRepo::new();
        repo.commit_files(&[(".gitignore", ".env\n.env.*\ndata/\n")], "ignore");
        let env = format!("TOKEN=env-{case}-{:016x}\n", rng.next());
        std::fs::write(repo.base.join(".env"), &env).unwrap();
        let mut shared = vec![env.clone()];
        let mut data = Vec::new();
        for i in 0..1 + rng.below(3) {
            let dirs: String = (0..rng.below(3)).map(|d| format!("d{d}/")).collect();
            let rel = format!("data/{dirs}creds{i}.json");
            let body = format!("{{\"key\": \"linked-{case}-{:016x}\"}}\n", rng.next());
            let p = repo.base.join(&rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, &body).unwrap();
            shared.push(body);
            data.push((rel, false));
        }
        repo.write_rules("worktree:\n  sharing:\n    env: link\n    link: [data]\n");
        repo.install_hooks();
        let tree = repo.add_card("1");
        World {
            repo,
            tree,
            shared,
            env,
            data,
            n: 0,
            case,
        }
    }

    fn git(&self, args: &[&str]) -> String {
        self.repo.git(&self.tree, args).trim().to_owned()
    }

    fn unique(&mut self) -> usize {
        self.n += 1;
        self.n
    }

    /// Bytes to carry: shared ones (the `.env` now or before, a linked file) or harmless
    /// ones (new bytes, or shared bytes with one byte changed); whether they are shared.
    fn payload(&mut self, rng: &mut Rng) -> (String, bool) {
        let n = self.unique();
        match rng.below(4) {
            0 | 1 => (rng.pick(&self.shared).clone(), true),
            2 => (format!("work {} {n} {:x}\n", self.case, rng.next()), false),
            _ => {
                let mut b = rng.pick(&self.shared).clone().into_bytes();
                let i = rng.below(b.len() - 1);
                b[i] = if b[i] == b'Q' { b'R' } else { b'Q' };
                (String::from_utf8(b).unwrap(), false)
            }
        }
    }

    /// A path at depth 0 to 3, never one kardwt's ignore or link rules name.
    fn path(&mut self, rng: &mut Rng) -> String {
        let n = self.unique();
        let dirs: String = (0..rng.below(4)).map(|d| format!("p{d}/")).collect();
        let name = *rng.pick(&["notes", "creds", "fixture", "dump"]);
        let ext = *rng.pick(&[".txt", ".json", ""]);
        format!("{dirs}{name}{n}{ext}")
    }

    /// Commit `body` at a new path in the card's tree: then maybe renamed, moved deeper or
    /// deleted in a next commit. Returns a description.
    fn commit(&mut self, rng: &mut Rng, body: &str) -> String {
        let at = self.path(rng);
        let p = self.tree.join(&at);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
        self.git(&["add", "--", &at]);
        self.git(&["commit", "--quiet", "-m", "add"]);
        match rng.below(3) {
            0 => {
                let to = format!("moved/deeper/{}", self.path(rng));
                std::fs::create_dir_all(self.tree.join(&to).parent().unwrap()).unwrap();
                self.git(&["mv", "--", &at, &to]);
                self.git(&["commit", "--quiet", "-m", "rename"]);
                format!("committed as {at}, renamed to {to}")
            }
            1 => {
                self.git(&["rm", "--quiet", "--", &at]);
                self.git(&["commit", "--quiet", "-m", "gone"]);
                format!("committed as {at}, deleted next")
            }
            _ => format!("committed as {at}"),
        }
    }

    /// A tree holding `id` nested at some depth beside a harmless file.
    fn tree_with(&mut self, rng: &mut Rng, id: &str) -> String {
        let readme = format!("other {}\n", self.unique());
        let other = blob(&self.repo, &self.tree, &readme);
        let mut tree = mktree(
            &self.repo,
            &self.tree,
            &format!(
                "100644 blob {id}\tkey{}\n100644 blob {other}\tREADME\n",
                self.n
            ),
        );
        for d in 0..rng.below(3) {
            tree = mktree(
                &self.repo,
                &self.tree,
                &format!("040000 tree {tree}\tdir{d}\n"),
            );
        }
        tree
    }

    /// Tag `target` as `t<n>`, lightweight or annotated; the refspec and a description.
    fn tag(&mut self, rng: &mut Rng, n: usize, target: &str, what: &str) -> (String, String) {
        let name = format!("t{n}");
        let annotated = rng.chance(1, 2);
        let mut args = vec!["tag"];
        if annotated {
            args.extend(["-a", "-m", "tagged"]);
        }
        args.extend([name.as_str(), target]);
        self.git(&args);
        let kind = if annotated {
            "annotated"
        } else {
            "lightweight"
        };
        (format!("refs/tags/{name}"), format!("{kind} tag to {what}"))
    }

    /// Make one ref carrying `body`; returns the refspec to push and a description.
    fn carrier(&mut self, rng: &mut Rng, body: &str) -> (String, String) {
        let n = self.unique();
        let id = blob(&self.repo, &self.tree, body);
        match rng.below(6) {
            0 | 1 => {
                let what = self.commit(rng, body);
                ("card/1".into(), format!("card/1: {what}"))
            }
            2 => self.tag(rng, n, &id, "the blob"),
            3 => {
                let tree = self.tree_with(rng, &id);
                self.tag(rng, n, &tree, "a tree")
            }
            4 => {
                let tree = self.tree_with(rng, &id);
                let parent = head(&self.repo, &self.tree);
                let commit = self.git(&["commit-tree", &tree, "-p", &parent, "-m", "side"]);
                if rng.chance(1, 2) {
                    self.tag(rng, n, &commit, "a side commit")
                } else {
                    self.git(&["branch", &format!("side{n}"), &commit]);
                    (format!("refs/heads/side{n}"), "a side branch".into())
                }
            }
            _ => {
                let notes = format!("refs/notes/n{n}");
                let tip = head(&self.repo, &self.tree);
                self.git(&["notes", "--ref", &notes, "add", "-C", &id, &tip]);
                (notes, "a note".into())
            }
        }
    }

    /// The ids of the objects git would send for `refspecs` (each `<local ref>`, pushed to the
    /// same name): `git rev-list --objects` of their objects, not of origin's remote-tracking
    /// refs nor of what origin has at those names (when at hand).
    fn oracle(&self, refspecs: &[String]) -> BTreeSet<String> {
        let mut revs = String::new();
        for r in refspecs {
            let full = if r.starts_with("refs/") {
                r.clone()
            } else {
                format!("refs/heads/{r}")
            };
            revs.push_str(&format!("{}\n", self.git(&["rev-parse", &full])));
            let theirs = self.git(&["ls-remote", "origin", &full]);
            if let Some(oid) = theirs.split_whitespace().next() {
                let here = self.repo.git_output(&self.tree, &["cat-file", "-e", oid]);
                if here.code == 0 {
                    revs.push_str(&format!("^{oid}\n"));
                }
            }
        }
        let tracking = self.git(&[
            "for-each-ref",
            "--format=%(objectname)",
            "refs/remotes/origin/",
        ]);
        for oid in tracking.lines() {
            revs.push_str(&format!("^{oid}\n"));
        }
        let out = self
            .repo
            .spawn(
                "sh",
                &self.tree,
                &[
                    "-c",
                    "printf '%s' \"$1\" | git rev-list --objects --stdin",
                    "sh",
                    &revs,
                ],
            )
            .wait(COMMAND_TIMEOUT);
        assert_eq!(out.code, 0, "rev-list failed:\n{out}");
        out.stdout
            .lines()
            .filter_map(|l| l.split(' ').next())
            .map(str::to_owned)
            .collect()
    }
}

fn shared_ids(w: &World) -> BTreeSet<String> {
    w.shared.iter().map(|s| blob(&w.repo, &w.tree, s)).collect()
}

#[test]
fn a_push_is_blocked_exactly_when_git_would_send_shared_bytes() {
    let (seed, cases) = Rng::seed_and_cases(DEFAULT_CASES);
    eprintln!("pre-push against rev-list: seed {seed}, {cases} cases (KARDWT_SEED={seed} replays)");
    let started = std::time::Instant::now();
    let mut rng = Rng::new(seed);
    let (mut refused, mut passed) = (0, 0);
    for case in 0..cases {
        let mut w = World::new(&mut rng, case);
        for step in 0..2 + rng.below(4) {
            if rng.chance(1, 3) {
                // The base's `.env` edited: the version before is an earlier one now.
                w.env.push_str(&format!("LINE{step}={:x}\n", rng.next()));
                std::fs::write(w.repo.base.join(".env"), &w.env).unwrap();
                // What pre-push judges today is shared from now on.
                w.shared.push(w.env.clone());
            }
            let i = rng.below(w.data.len());
            if rng.chance(1, 4) && !w.data[i].1 {
                // A linked file edited: the version linked is an earlier one now.
                let body = format!("{{\"key\": \"edited-{case}-{:016x}\"}}\n", rng.next());
                std::fs::write(w.repo.base.join(&w.data[i].0), &body).unwrap();
                w.data[i].1 = true;
                w.shared.push(body);
            }
            let mut refspecs = Vec::new();
            let mut said = Vec::new();
            let before = head(&w.repo, &w.tree);
            for _ in 0..1 + rng.below(2) {
                let (body, is_shared) = w.payload(&mut rng);
                let (refspec, what) = w.carrier(&mut rng, &body);
                said.push(format!("{what} (shared bytes: {is_shared})"));
                if !refspecs.contains(&refspec) {
                    refspecs.push(refspec);
                }
            }
            let sent = w.oracle(&refspecs);
            let ids = shared_ids(&w);
            let bad: Vec<&String> = sent.intersection(&ids).collect();
            let what = format!("seed {seed}, case {case}, step {step}: {said:?}, sent {bad:?}");
            let from = if rng.chance(1, 4) {
                w.repo.base.clone()
            } else {
                w.tree.clone()
            };
            let specs: Vec<&str> = refspecs.iter().map(String::as_str).collect();
            let out = push(&w.repo, &from, &specs);
            if bad.is_empty() {
                assert_eq!(
                    out.code, 0,
                    "{what}: a push of no shared bytes was refused:\n{out}"
                );
                passed += 1;
            } else {
                assert_ne!(out.code, 0, "{what}: the push went through:\n{out}");
                assert!(
                    out.stderr.contains("blocked"),
                    "{what}: not refused by the check:\n{out}"
                );
                refused += 1;
                // Refused work leaves the branch, so later pushes judge their own bytes.
                w.git(&["reset", "--quiet", "--hard", &before]);
            }
            for id in &ids {
                assert!(
                    !origin_has(&w.repo, id),
                    "{what}: origin holds shared blob {id}"
                );
            }
        }
    }
    eprintln!(
        "pre-push against rev-list: {cases} cases ({refused} pushes refused, {passed} passed) in {:?}",
        started.elapsed()
    );
}
