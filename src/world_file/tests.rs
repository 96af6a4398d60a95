use super::*;

fn parse(text: &str) -> Result<WorldFile, WorldFileError> {
    WorldFile::parse(text, Path::new("w.toml"))
}

const BASE: &str = "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[[regimes]]\nlabel = \"b\"\nconditions = { gravity = 12.0 }\n";

#[test]
fn a_cycle_file_loads_with_its_regimes_and_plan() {
    let w = parse(&format!(
        "{BASE}\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"b\"]\nevery = 50\n"
    ))
    .unwrap();
    assert_eq!(w.regimes.len(), 2);
    assert_eq!(w.plan, Plan::cycle(&["a", "b"], 50));
}

/// The scheduler alone judges the plan's values; the file maps its verdict to the line
/// and field at fault.
#[test]
fn plan_values_the_scheduler_refuses_name_their_line_and_field() {
    for (schedule, line, field) in [
        (
            "plan = \"cycle\"\nlabels = [\"a\"]\nevery = 0",
            14,
            "schedule.every",
        ),
        (
            "plan = \"stochastic\"\nlabels = [\"a\", \"b\"]\nmin_dwell = 5\nmean_dwell = inf",
            15,
            "schedule.mean_dwell",
        ),
        (
            "plan = \"stochastic\"\nlabels = [\"a\", \"b\"]\nmin_dwell = 0\nmean_dwell = 9.0",
            14,
            "schedule.min_dwell",
        ),
        (
            "plan = \"fixed\"\nshifts = [{ step = 9, label = \"b\" },\n  { step = 9, label = \"a\" }]",
            14,
            "schedule.shifts.step",
        ),
        (
            "plan = \"cycle\"\nlabels = [\"a\", \"z\"]\nevery = 5",
            13,
            "schedule.labels",
        ),
    ] {
        let err = parse(&format!("{BASE}\n[schedule]\n{schedule}\n")).unwrap_err();
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(line), Some(field)),
            "{err}"
        );
    }
}

#[test]
fn syntax_errors_name_the_line() {
    let err = parse("[world]\nkind = \"cartpole\"\nx = = 3\n").unwrap_err();
    assert_eq!(err.line, Some(3), "{err}");
}

#[test]
fn unknown_keys_are_rejected_with_their_line() {
    let err = parse(&format!("{BASE}\n[harness]\nstepz = 4\n")).unwrap_err();
    assert_eq!(err.line, Some(12), "{err}");
    assert!(err.to_string().contains("stepz"), "{err}");
}

#[test]
fn unknown_world_params_point_at_their_key() {
    let err = parse("[world]\nkind = \"cartpole\"\n[world.params]\ngravity = 9.8\nmasscar = 2.0\n")
        .unwrap_err();
    assert_eq!(err.line, Some(5), "{err}");
    assert_eq!(err.field.as_deref(), Some("world.params.masscar"));
}

#[test]
fn out_of_range_params_and_conditions_are_rejected() {
    let err = parse("[world]\nkind = \"cartpole\"\n[world.params]\nmasscart = 0.0\n").unwrap_err();
    assert_eq!(err.line, Some(4), "{err}");
    let err = parse(&BASE.replace("gravity = 12.0", "gravity = -3.0")).unwrap_err();
    assert_eq!(err.line, Some(9), "{err}");
    assert!(err.message.contains("out of range"), "{err}");
}

#[test]
fn a_fraction_for_an_integer_parameter_is_rejected_at_load_not_mid_run() {
    let err = parse(&BASE.replace("gravity = 12.0", "max_episode_steps = 2.5")).unwrap_err();
    assert_eq!(err.line, Some(9), "{err}");
    assert!(err.message.contains("max_episode_steps"), "{err}");
}

#[test]
fn schedules_naming_undefined_labels_are_rejected() {
    let err = parse(&format!(
        "{BASE}\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"c\"]\nevery = 5\n"
    ))
    .unwrap_err();
    assert_eq!(err.line, Some(13), "{err}");
    assert!(err.message.contains("`c`"), "{err}");
}

#[test]
fn empty_regime_lists_and_zero_periods_are_rejected() {
    let err = parse("regimes = []\n[world]\nkind = \"cartpole\"\n").unwrap_err();
    assert_eq!(err.line, Some(1), "{err}");
    let err = parse(&format!(
        "{BASE}\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\"]\nevery = 0\n"
    ))
    .unwrap_err();
    assert_eq!(err.field.as_deref(), Some("schedule.every"), "{err}");
}

#[test]
fn unknown_kind_lists_the_known_ones() {
    let err = parse("[world]\nkind = \"pendulum\"\n").unwrap_err();
    assert_eq!(err.line, Some(2));
    assert!(err.message.contains("cartpole"), "{err}");
}
