//! Tests of `bench outofcore`'s arguments, caps and reports.

use super::*;

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn process_states_parse_past_odd_command_names() {
    assert_eq!(proc_state("42 (ginex) R 1 42 42 0 -1"), Some('R'));
    assert_eq!(proc_state("42 (a) b) c) Z 1 42"), Some('Z'));
    assert_eq!(proc_state("garbage"), None);
    let io = "rchar: 1354000\nread_bytes: 218202112\nwrite_bytes: 4096\n";
    assert_eq!(
        crate::cgroup::keyed_counter(io, "read_bytes:"),
        Some(218_202_112)
    );
}

#[test]
fn rounds_alternate_policies() {
    let order = run_order(&names(&["ginex", "mmap"]), 3);
    let got: Vec<String> = order.iter().map(|(r, p)| format!("{r}{p}")).collect();
    assert_eq!(
        got,
        ["1ginex", "1mmap", "2ginex", "2mmap", "3ginex", "3mmap"]
    );
}

#[test]
fn help_texts_are_searched_for_flags_and_subcommands() {
    let epoch_help = "Usage: ginex epoch [OPTIONS] <STORE>\n\nOptions:\n      --memory-x <M>  no\n      --policy <POLICY>  p\n";
    assert!(!help_has_flag(epoch_help, "--memory"));
    assert!(help_has_flag(epoch_help, "--policy"));
    assert!(help_has_flag("  -m, --memory <M>  cap\n", "--memory"));
    assert!(help_has_flag("  --memory=<M>\n", "--memory"));
    let top = "ginex\n\nUsage: ginex <COMMAND>\n\nCommands:\n  gen      Generate\n  train    Train a GNN\n  help     Print\n\nOptions:\n  -h, --help\n";
    assert!(help_has_subcommand(top, "train"));
    assert!(help_has_subcommand(top, "gen"));
    let no_train = "Commands:\n  gen      Generate\n           train is not here\n  bench    Run\n\nOptions:\n  train\n";
    assert!(!help_has_subcommand(no_train, "train"));
}

#[test]
fn budget_goes_as_memory_or_as_explicit_cache_sizes() {
    let m = 1000 << 20;
    let (a, note) = budget_args(m, "1000MiB", true, &[]);
    assert_eq!(a, ["--memory", "1000MiB"]);
    assert!(note.contains("--memory 1000MiB"), "{note}");
    let (a, note) = budget_args(m, "1000MiB", false, &[]);
    assert_eq!(
        a,
        [
            "--feature-cache-bytes",
            &(m / 2).to_string(),
            "--neighbor-cache-bytes",
            &(m * 8 / 100).to_string()
        ]
    );
    assert!(
        note.contains("has no --memory") && note.contains("50 % of M"),
        "{note}"
    );
    // The user's explicit sizes after -- win.
    let extra = names(&["--feature-cache-bytes=1GiB"]);
    let (a, _) = budget_args(m, "1000MiB", false, &extra);
    assert_eq!(a, ["--neighbor-cache-bytes", &(m * 8 / 100).to_string()]);
    let (a, note) = budget_args(m, "1000MiB", true, &names(&["--memory", "2GiB"]));
    assert!(a.is_empty() && note.contains("as given"), "{note}");
    assert!(sets_flag(&names(&["--run-dir", "x"]), "--run-dir"));
    assert!(!sets_flag(&names(&["--run-dirs"]), "--run-dir"));
}

#[test]
fn the_benchs_task_and_neg_go_to_every_child_once() {
    let after = names(&["--fanouts", "10,5"]);
    assert_eq!(
        child_extra(Some("link"), Some(3), &after).unwrap(),
        names(&["--task", "link", "--neg", "3", "--fanouts", "10,5"])
    );
    // The `--` form alone is passed as it is.
    let dashed = names(&["--task", "link", "--neg", "2"]);
    assert_eq!(child_extra(None, None, &dashed).unwrap(), dashed);
    assert_eq!(
        child_extra(None, Some(2), &names(&["--task=link"])).unwrap(),
        names(&["--neg", "2", "--task=link"])
    );
    let twice = child_extra(Some("link"), None, &dashed)
        .unwrap_err()
        .to_string();
    assert!(twice.contains("--task is given both"), "{twice}");
    let twice = child_extra(Some("link"), Some(1), &names(&["--neg=4"]))
        .unwrap_err()
        .to_string();
    assert!(twice.contains("--neg is given both"), "{twice}");
    for task in [None, Some("node")] {
        let e = child_extra(task, Some(2), &after).unwrap_err().to_string();
        assert!(e.contains("add --task link"), "{e}");
    }
}
