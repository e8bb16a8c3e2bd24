//! What a person reads from `verify` and `status`: one line when every check passed, what
//! failed when one did, and every check with `-v`, each named in words (never an internal name
//! such as `dot_git`), pinned whole.
use crate::support::*;

#[test]
fn verify_and_status_say_one_line_on_success_and_every_check_with_v() {
    let repo = TestRepo::new();
    let tree = repo.add_card("1");
    let mut shown = String::new();
    for args in [
        &["verify", "1"][..],
        &["verify", "1", "-v"],
        &["status", "1"],
        &["status", "1", "--verbose"],
    ] {
        let out = repo.kardwt(&repo.base, args);
        out.expect_code(0);
        shown.push_str(&pinned_case(&args.join(" "), &out));
    }

    // A failing check is shown without -v, and the summary names it.
    repo.edit_record(&tree, "card", "2");
    for args in [&["verify"][..], &["status"]] {
        let out = repo.kardwt(&tree, args);
        shown.push_str(&pinned_case(&format!("in the tree: {}", args[0]), &out));
    }
    pinned(&repo).bind(|| insta::assert_snapshot!("verify_and_status_lines", shown));
}
