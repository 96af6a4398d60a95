//! Roles worlds from the outside: the shipped file, the command line, and the hostile
//! inputs of HOSTILE_INPUTS.md (each an exit 2 naming the file, line and field or flag).

mod common;

use std::path::{Path, PathBuf};

use common::{Scratch, cli, fails_with, path, run};
use perennial::world_file::TomlFile;
use perennial::world_file::WorldFile;

const SHIPPED: &str = include_str!("../worlds/enterprise.toml");

fn load(text: &str) -> Result<WorldFile, perennial::world_file::WorldFileError> {
    WorldFile::parse(text, Path::new("enterprise.toml"))
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn the_shipped_roles_file_loads_with_its_roles_in_file_order() {
    let w = load(SHIPPED).unwrap();
    let roles = w.roles.unwrap();
    assert_eq!(roles.names(), vec!["warehouse", "logistics"]);
    assert_eq!(roles.alpha, 1.0);
}

#[test]
fn a_role_that_owns_no_operation_is_refused_at_its_line() {
    let text = SHIPPED.replace(
        r#"ops = ["noop", "choose_carrier", "prioritize_sku", "hold_wave"]"#,
        r#"ops = ["noop"]"#,
    );
    let e = load(&text).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("roles.logistics.ops"), "{e}");
    assert_eq!(e.line, Some(line_of(&text, r#"ops = ["noop"]"#)), "{e}");
    assert!(e.to_string().contains("owns no operation"), "{e}");
}

#[test]
fn an_operation_owned_twice_is_refused_at_its_line() {
    let text = SHIPPED.replace(
        r#""choose_carrier", "prioritize_sku""#,
        r#""choose_carrier", "reorder", "prioritize_sku""#,
    );
    let e = load(&text).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("roles.logistics.ops"), "{e}");
    assert_eq!(
        e.line,
        Some(line_of(&text, r#""reorder", "prioritize_sku""#)),
        "{e}"
    );
    assert!(e.to_string().contains("`reorder` is owned twice"), "{e}");
}

#[test]
fn an_unknown_operation_and_a_roles_table_in_a_world_without_roles_are_refused() {
    let text = SHIPPED.replace(r#""hold_wave"]"#, r#""hold_waves"]"#);
    let e = load(&text).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("roles.logistics.ops"), "{e}");
    assert!(
        e.to_string().contains("unknown operation `hold_waves`"),
        "{e}"
    );
    let text = SHIPPED.replace(r#"kind = "enterprise""#, r#"kind = "morpheus""#);
    let e = load(&text).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("roles"), "{e}");
    assert_eq!(e.line, Some(line_of(&text, "[roles]")), "{e}");
}

#[test]
fn role_terms_must_partition_the_reward() {
    let text = SHIPPED.replace(
        r#"terms = ["revenue", "shipping", "late", "lost"]"#,
        r#"terms = ["revenue", "shipping", "late"]"#,
    );
    let e = load(&text).unwrap_err();
    assert!(e.to_string().contains("`lost` is owned by no role"), "{e}");
}

#[test]
fn an_unknown_role_in_the_agent_flag_exits_2_naming_it() {
    refuses_agents("warehouse=base-stock,sales=random", "unknown role `sales`");
}

#[test]
fn a_role_agent_that_does_not_fit_its_roles_space_exits_2() {
    // balance is CartPole's: it does not exist for a role, so the run refuses it by name.
    refuses_agents("warehouse=oracle,logistics=random", "oracle");
}

/// A 10-hour run of the shipped roles world with `--agent agents` exits 2 naming `message`.
fn refuses_agents(agents: &str, message: &str) {
    let args = [
        "run",
        "worlds/enterprise.toml",
        "--agent",
        agents,
        "--steps",
        "10",
        "--no-trace",
    ];
    fails_with(&args, 2, message);
}

#[test]
fn a_roles_run_writes_one_row_per_hour_with_the_team_reward() {
    let (_dir, trace) = roles_trace("jsonl", 500, &[]);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert_eq!(text.lines().count(), 500);
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["algorithm_id"],
        "warehouse.base-stock+logistics.random"
    );
}

/// Runs `steps` hours of the shipped roles world into a fresh trace of `format`, with
/// `extra` flags, and returns its directory (removed when dropped) and path.
fn roles_trace(format: &str, steps: u32, extra: &[&str]) -> (Scratch, PathBuf) {
    let dir = Scratch::new(&format!("roles-{format}-{steps}-{}", extra.len()));
    let trace = dir.join(&format!("t.{format}"));
    let steps = steps.to_string();
    let mut args = vec![
        "run",
        "worlds/enterprise.toml",
        "--agent",
        "warehouse=base-stock,logistics=random",
        "--steps",
        &steps,
        "--format",
        format,
        "--trace",
        path(&trace),
    ];
    args.extend_from_slice(extra);
    run(&args);
    (dir, trace)
}

/// Every row read back has both roles' rewards, and they sum to the team reward.
fn assert_role_rewards_read_back(trace: &Path, rows: usize) {
    let read: Vec<_> = perennial::trace::TraceReader::open(&[trace])
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(read.len(), rows);
    for row in &read {
        let roles: Vec<&str> = row.role_rewards.keys().map(String::as_str).collect();
        assert_eq!(roles, ["logistics", "warehouse"], "step {}", row.step);
        let sum: f64 = row.role_rewards.values().sum();
        assert!(
            (sum - row.reward).abs() <= 1e-9 * row.reward.abs().max(1.0),
            "step {}: roles {sum} vs team {}",
            row.step,
            row.reward
        );
    }
}

#[test]
fn a_jsonl_roles_trace_writes_role_rewards_after_bound_and_reads_them_back() {
    let (_dir, trace) = roles_trace("jsonl", 200, &[]);
    let text = std::fs::read_to_string(&trace).unwrap();
    let first = text.lines().next().unwrap();
    let at = first.find(r#","role_rewards":{"warehouse":"#).expect(first);
    assert!(first.find(r#","bound":"#).unwrap() < at, "{first}");
    assert_role_rewards_read_back(&trace, 200);
}

#[test]
fn a_csv_roles_trace_has_one_r_column_per_role_and_reads_them_back() {
    let (_dir, trace) = roles_trace("csv", 200, &["--record-transitions"]);
    let text = std::fs::read_to_string(&trace).unwrap();
    let header = text.lines().next().unwrap();
    assert!(
        header.ends_with(",bound,r.warehouse,r.logistics,obs,action"),
        "{header}"
    );
    assert_role_rewards_read_back(&trace, 200);
}

#[test]
fn a_parquet_roles_trace_has_a_role_rewards_struct_and_reads_it_back() {
    let (_dir, trace) = roles_trace("parquet", 200, &["--record-transitions"]);
    let part = std::fs::File::open(trace.join("part-00000.parquet")).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(part).unwrap();
    let field = reader
        .schema()
        .field_with_name("role_rewards")
        .unwrap()
        .clone();
    match field.data_type() {
        arrow_schema::DataType::Struct(fields) => {
            let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
            assert_eq!(names, ["warehouse", "logistics"]);
        }
        other => panic!("role_rewards is {other}"),
    }
    assert_role_rewards_read_back(&trace, 200);
}

/// 20 hours of the shipped warehouse world, a world without roles, traced to `trace`.
fn warehouse_trace(trace: &Path) {
    run(&[
        "run",
        "worlds/warehouse.toml",
        "--steps",
        "20",
        "--trace",
        path(trace),
    ]);
}

#[test]
fn a_trace_of_a_world_without_roles_has_no_role_rewards() {
    let dir = Scratch::new("noroles");
    let trace = dir.join("t.jsonl");
    warehouse_trace(&trace);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains("role_rewards"));
    let rows: Vec<_> = perennial::trace::TraceReader::open(&[&trace])
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(rows.iter().all(|r| r.role_rewards.is_empty()));
}

/// `perennial eval --json` of `args`, parsed; panics unless it succeeds.
fn eval_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["eval", "--json"];
    all.extend_from_slice(args);
    let out = run(&all);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn mean_estimate(report: &serde_json::Value) -> f64 {
    report["aggregate"]["algorithms"][0]["mean"]["estimate"]
        .as_f64()
        .unwrap()
}

#[test]
fn eval_role_measures_each_roles_own_reward_and_they_add_up_to_the_team() {
    let (_dir, trace) = roles_trace("jsonl", 1000, &[]);
    let (_pdir, parquet) = roles_trace("parquet", 1000, &[]);
    let t = path(&trace);
    let team = mean_estimate(&eval_json(&[t]));
    let warehouse = mean_estimate(&eval_json(&[t, "--role", "warehouse"]));
    let logistics = mean_estimate(&eval_json(&[t, "--role", "logistics"]));
    assert!(warehouse != team && logistics != team);
    assert!(
        (warehouse + logistics - team).abs() <= 1e-6 * team.abs().max(1.0),
        "{warehouse} + {logistics} vs {team}"
    );
    // Parquet goes the row path for a role and gives the same figures.
    let p = path(&parquet);
    assert_eq!(
        eval_json(&[p, "--role", "logistics"])["aggregate"],
        eval_json(&[t, "--role", "logistics"])["aggregate"]
    );
}

#[test]
fn an_eval_report_names_the_role_it_measures() {
    let (_dir, trace) = roles_trace("jsonl", 50, &["--seed", "4"]);
    let t = path(&trace);
    assert_eq!(eval_json(&[t, "--role", "warehouse"])["role"], "warehouse");
    assert!(eval_json(&[t]).get("role").is_none());
    let out = cli(&["eval", t, "--role", "logistics"]);
    let text = common::text(&out.stdout);
    assert_eq!(
        text.lines().next(),
        Some(
            "role logistics: the metrics measure its own reward (role_rewards.logistics), not the team's"
        ),
        "{text}"
    );
}

#[test]
fn eval_role_refuses_an_unknown_role_or_a_trace_without_roles_naming_the_flag() {
    let (dir, trace) = roles_trace("csv", 20, &[]);
    let err = fails_with(
        &["eval", path(&trace), "--role", "sales"],
        2,
        "`--role sales`",
    );
    assert!(err.contains("its roles are logistics, warehouse"), "{err}");
    let single = dir.join("single.jsonl");
    warehouse_trace(&single);
    let out = cli(&["eval", path(&single), "--role", "warehouse"]);
    assert_eq!(out.status.code(), Some(2));
    let err = common::text(&out.stderr);
    assert!(
        err.contains("`--role warehouse`") && err.contains("no `role_rewards` column"),
        "{err}"
    );
}

#[test]
fn episodes_of_a_roles_trace_hold_one_trajectory_per_role_grouped_per_role() {
    let (dir, trace) = roles_trace("jsonl", 300, &["--record-transitions"]);
    let out = dir.join("ep.jsonl");
    let done = run(&[
        "episodes",
        path(&trace),
        "--out",
        path(&out),
        "--advantage",
        "grpo",
        "--chunk-steps",
        "100",
    ]);
    let summary = common::text(&done.stdout);
    assert!(
        summary.contains("enterprise:warehouse (3 trajectories")
            && summary.contains("enterprise:logistics (3 trajectories"),
        "{summary}"
    );
    let rows: Vec<perennial::trace::TraceRow> = perennial::trace::TraceReader::open(&[&trace])
        .collect::<Result<_, _>>()
        .unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    for (e, line) in text.lines().enumerate() {
        let episode: serde_json::Value = serde_json::from_str(line).unwrap();
        let t = episode["trajectories"].as_array().unwrap();
        let names: Vec<&str> = t.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["warehouse", "logistics"]);
        for (k, step) in t[0]["steps"].as_array().unwrap().iter().enumerate() {
            let row = &rows[e * 100 + k];
            let (w, l) = (&t[0]["steps"][k], &t[1]["steps"][k]);
            assert_eq!(w["reward"].as_f64(), Some(row.role_rewards["warehouse"]));
            assert_eq!(l["reward"].as_f64(), Some(row.role_rewards["logistics"]));
            assert_eq!(step["info"]["team_reward"].as_f64(), Some(row.reward));
            // Each role's Step holds its own view and its own index, as the trace has them.
            let Some(perennial::trace::RecordedObs::Roles(views)) = &row.obs else {
                panic!("step {}: no per-role obs", row.step);
            };
            let action = row.action.as_ref().unwrap();
            assert_eq!(w["observation"], serde_json::json!(views["warehouse"]));
            assert_eq!(l["observation"], serde_json::json!(views["logistics"]));
            assert_eq!(w["action"], action["warehouse"]);
            assert_eq!(l["action"], action["logistics"]);
            assert!(w["advantage"].is_number() && l["advantage"].is_number());
        }
    }
}
