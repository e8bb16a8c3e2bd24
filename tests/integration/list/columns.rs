//! The table `list` prints: a header, aligned columns, card ids in natural order, and the
//! status columns of every tree (dirty, ahead, behind), with `-` where a row has none.
use crate::support::TestRepo;

/// The card column of the table, in the order printed (the header skipped).
fn cards(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn cards_are_listed_in_natural_order_in_the_table_and_in_json() {
    let repo = TestRepo::new();
    for card in ["3", "10", "2"] {
        repo.add_card(card);
    }
    let out = repo.kardwt(&repo.base, &["list"]);
    out.expect_code(0);
    assert_eq!(cards(&out.stdout), ["2", "3", "10"], "{out}");
    let json: Vec<String> = repo
        .list_json()
        .iter()
        .map(|r| r["card"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(json, ["2", "3", "10"]);
}

#[test]
fn the_table_has_a_header_and_aligned_columns() {
    let repo = TestRepo::new();
    for card in ["10", "2", "a-long-card-name"] {
        let wt = repo.add_card(card);
        // A creation time fixed in the past, so the age column has a stable width.
        repo.edit_record(&wt, "created_at", "2026-01-01T00:00:00Z");
    }
    std::fs::write(repo.card_path("2").join("new.txt"), "untracked\n").unwrap();
    let gone = repo.add_gone_worktree();
    let out = repo.kardwt(&repo.base, &["list"]);
    out.expect_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    // Every column starts where the header's does.
    let header = lines[0];
    for name in ["STATE", "DIRTY", "AHEAD", "BEHIND", "AGE", "BRANCH", "PATH"] {
        let at = header.find(name).unwrap();
        for line in &lines[1..] {
            assert_eq!(
                line.as_bytes()[at - 1],
                b' ',
                "column {name} not aligned in {line:?}:\n{out}"
            );
            assert_ne!(
                line.as_bytes()[at],
                b' ',
                "{name} empty in {line:?}:\n{out}"
            );
        }
    }
    assert!(
        lines.last().unwrap().ends_with(gone.to_str().unwrap()),
        "a row without a card comes last:\n{out}"
    );
    let mut settings = crate::support::pinned(&repo);
    settings.add_filter(r"\b\d+d\b", "[AGE]");
    settings.bind(|| insta::assert_snapshot!("list_table", out.stdout));
}
