//! The guard sees globs: an `rm -r` operand with `*`, `?`, `[…]` or `{…}` is judged as the
//! shell expands it in the command's directory, so a pattern that matches managed worktrees,
//! the worktree root or the base is denied like the paths it stands for, and a quoted or
//! unmatched pattern (which rm gets as it is) is not.
use crate::support::TestRepo;

/// The guard's answer (`--format text`) to `line` run from `dir`: the replacement it names,
/// empty for silence.
#[track_caller]
fn replacement(repo: &TestRepo, dir: &std::path::Path, line: &str) -> String {
    let out = repo.kardwt(
        dir,
        &["guard", "--format", "text", &format!("--command={line}")],
    );
    match out.code {
        0 => {
            assert_eq!(
                (out.stdout.as_str(), out.stderr.as_str()),
                ("", ""),
                "{out}"
            );
            String::new()
        }
        2 => out
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("hint: run instead: "))
            .unwrap_or_else(|| panic!("no replacement: {out}"))
            .to_owned(),
        _ => panic!("unexpected exit: {out}"),
    }
}

#[test]
fn rm_of_a_glob_matching_managed_worktrees_the_root_or_the_base_is_denied() {
    let repo = TestRepo::new();
    repo.write_rules(&repo.rules_with_prepare(false));
    let one = repo.add_card("1");
    let two = repo.add_card("2");
    let remove = |p: &std::path::Path| {
        format!(
            "git kardwt remove --path {} --force",
            crate::support::sh_quote(p)
        )
    };
    let both = format!("{} && {}", remove(&one), remove(&two));
    let root = repo.root();
    for (dir, line, want) in [
        (&repo.base, "rm -rf ../base.worktrees/*", both.clone()),
        (&root, "rm -rf card-*", both.clone()),
        (&root, "rm -rf card-?", both.clone()),
        (&root, "rm -rf card-{1,2}", both.clone()),
        (&root, "rm -rf card-{2,9}", remove(&two)),
        (&root, "rm -rf card-[!1]", remove(&two)),
        (&root, "rm -rf ./*/", both.clone()),
        (&repo.base, "rm -rf ../base.w*", both.clone()),
        (&repo.base, "rm -rf ../*", both.clone()),
        (&repo.base, "rm -rf ../bas?", both.clone()),
        (
            &repo.base,
            "rm -rf ../base.worktrees/card-$N*",
            both.clone(),
        ),
        // What rm gets as it is: quoted, escaped, or a pattern that matches nothing.
        (&root, "rm -rf 'card-*'", String::new()),
        (&root, "rm -rf card-\\?", String::new()),
        (&root, "rm -rf card-x*", String::new()),
        (&root, "rm -rf card-{8,9}", String::new()),
        (&root, "rm -rf card-*/src", String::new()),
        (&root, "cd $D && rm -rf card-*", String::new()),
    ] {
        assert_eq!(
            replacement(&repo, dir, line),
            want,
            "{line} (in {})",
            dir.display()
        );
    }
    assert!(one.is_dir() && two.is_dir());
}
