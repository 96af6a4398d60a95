//! Hostile input through the command line: every case gets a clear message naming the
//! file, line, field or step, and the documented exit code; none panics.
//!
//! The cases and the messages they get are recorded in `HOSTILE_INPUTS.md`; this test
//! checks the table is current. After a deliberate change to a message, regenerate it
//! with `PERENNIAL_BLESS=1 cargo test --release --test hostile_inputs`.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Case {
    /// What the input is.
    what: &'static str,
    /// The file to write (name, contents), if any.
    file: Option<(&'static str, String)>,
    /// Arguments; `{file}` is replaced by the written file's path.
    args: &'static [&'static str],
    /// Expected exit code.
    code: i32,
    /// Fragments the message must contain (`{file}` replaced as above).
    expect: &'static [&'static str],
}

const WORLD: &str = "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[[regimes]]\nlabel = \"b\"\nconditions = { gravity = 12.0 }\n";

const ROW: &str = r#"{"run_id":"r","seed":0,"algorithm_id":"a","task":"t","step":STEP,"episode":0,"episode_step":STEP,"reward":REWARD,"components":{},"payout":{},"regime":"x","regime_origin":"initial","terminated":false,"truncated":false,"ceiling":null}"#;

fn row(step: u64, reward: &str) -> String {
    ROW.replace("STEP", &step.to_string())
        .replace("REWARD", reward)
        + "\n"
}

fn rows(n: u64) -> String {
    (0..n).map(|s| row(s, "1.0")).collect()
}

fn cases() -> Vec<Case> {
    let warehouse = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/warehouse.toml"),
    )
    .unwrap();
    let enterprise = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("worlds/enterprise.toml"),
    )
    .unwrap();
    vec![
        Case {
            what: "world file: TOML syntax error",
            file: Some(("syntax.toml", "[world\nkind = \"cartpole\"\n".into())),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:1"],
        },
        Case {
            what: "world file: unknown key",
            file: Some((
                "unknown-key.toml",
                format!("{WORLD}\n[harness]\nstepz = 10\n"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:12", "stepz"],
        },
        Case {
            what: "world file: wrong type",
            file: Some((
                "wrong-type.toml",
                WORLD.replace("gravity = 12.0", "gravity = \"high\""),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:9"],
        },
        Case {
            what: "world file: unknown regime parameter",
            file: Some(("unknown-param.toml", WORLD.replace("gravity", "gravty"))),
            args: &["check", "{file}"],
            code: 2,
            expect: &[
                "{file}:9",
                "regimes.b.conditions.gravty",
                "unknown parameter",
            ],
        },
        Case {
            what: "world file: out-of-range parameter",
            file: Some((
                "out-of-range.toml",
                WORLD.replace("gravity = 12.0", "gravity = -1.0"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:9", "out of range"],
        },
        Case {
            what: "world file: a parameter of 1e308",
            file: Some((
                "huge-param.toml",
                WORLD.replace("gravity = 12.0", "gravity = 1e308"),
            )),
            args: &["check", "{file}"],
            code: 2,
            // The value as written, not as 309 digits.
            expect: &["{file}:9", "`gravity` = 1e308 is out of range"],
        },
        Case {
            what: "world file: empty regime list",
            file: Some((
                "empty-regimes.toml",
                "regimes = []\n[world]\nkind = \"cartpole\"\n".into(),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:1", "regime list is empty"],
        },
        Case {
            what: "world file: schedule names an undefined label",
            file: Some((
                "undefined-label.toml",
                format!(
                    "{WORLD}\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"c\"]\nevery = 10\n"
                ),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:13", "`c`"],
        },
        Case {
            what: "world file: unknown notify level",
            file: Some((
                "notify-level.toml",
                format!("{WORLD}\n[notify]\nlevel = \"loud\"\n"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &[
                "{file}:12",
                "notify.level",
                "use one of: none, flag, delta, label",
            ],
        },
        Case {
            what: "world file: zero capacity",
            file: Some((
                "zero-docks.toml",
                warehouse.replace("docks = 4", "docks = 0"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "world.params.docks"],
        },
        Case {
            what: "world file: negative capacity",
            file: Some((
                "negative-cash.toml",
                warehouse.replace("opening_cash = 10000.0", "opening_cash = -5.0"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "world.params.opening_cash"],
        },
        Case {
            what: "world file: opening cash of 1e300",
            file: Some((
                "huge-cash.toml",
                warehouse.replace("opening_cash = 10000.0", "opening_cash = 1e300"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "opening_cash`: is 1e300; use at most 1000000000"],
        },
        Case {
            what: "world file: negative credit line",
            file: Some((
                "negative-credit.toml",
                warehouse.replace(
                    "opening_cash = 10000.0",
                    "opening_cash = 10000.0\ncredit_limit = -1.0",
                ),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "world.params.credit_limit"],
        },
        Case {
            what: "world file: interest rate above 1",
            file: Some((
                "usury.toml",
                warehouse.replace(
                    "opening_cash = 10000.0",
                    "opening_cash = 10000.0\ninterest_rate = 2.0",
                ),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "world.params.interest_rate"],
        },
        Case {
            what: "world file: stale readings of age 0",
            file: Some((
                "stale-zero.toml",
                warehouse.replace(
                    "opening_cash = 10000.0",
                    "opening_cash = 10000.0\nstale_hours = 0",
                ),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "world.params.stale_hours"],
        },
        Case {
            what: "world file: missing-reading rate above 1",
            file: Some((
                "missing-rate.toml",
                warehouse.replace("stale_rate = 0.3", "missing_rate = 1.5"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "regimes.supplier_crisis.conditions.missing_rate"],
        },
        Case {
            what: "world file: fractional operation budget",
            file: Some((
                "op-budget.toml",
                warehouse.replace("op_budget = 12", "op_budget = 2.5"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "op_budget"],
        },
        Case {
            what: "world file: an oracle table for a regime the world does not have",
            file: Some((
                "oracle-label.toml",
                warehouse.replace("[agent.oracle.lean_market]", "[agent.oracle.lean_markt]"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "agent.oracle.lean_markt", "lean_market"],
        },
        Case {
            what: "world file: an unknown field in an oracle table",
            file: Some((
                "oracle-field.toml",
                warehouse.replace(
                    "[agent.oracle.peak_season]\nreorder_hours",
                    "[agent.oracle.peak_season]\nreorder_hourz",
                ),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "agent.oracle.peak_season.reorder_hourz"],
        },
        Case {
            what: "world file: a role that owns no operation",
            file: Some((
                "role-no-op.toml",
                enterprise.replace(
                    r#"ops = ["noop", "choose_carrier", "prioritize_sku", "hold_wave"]"#,
                    r#"ops = ["noop"]"#,
                ),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:40", "roles.logistics.ops", "owns no operation"],
        },
        Case {
            what: "world file: an operation owned by two roles",
            file: Some((
                "op-twice.toml",
                enterprise.replace(
                    r#""choose_carrier", "prioritize_sku""#,
                    r#""choose_carrier", "reorder", "prioritize_sku""#,
                ),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:40", "roles.logistics.ops", "`reorder` is owned twice"],
        },
        Case {
            what: "world file: a role owning an unknown operation",
            file: Some((
                "unknown-op.toml",
                enterprise.replace(r#""hold_wave"]"#, r#""hold_waves"]"#),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:40", "roles.logistics.ops", "hold_waves"],
        },
        Case {
            what: "world file: a per-role notify level for an unknown role",
            file: Some((
                "notify-role.toml",
                format!("{enterprise}\n[notify]\nwarehouse = \"delta\"\npurchasing = \"flag\"\n"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:100", "notify.purchasing", "unknown role `purchasing`"],
        },
        Case {
            what: "world file: an oracle table of the wrong type",
            file: Some((
                "oracle-type.toml",
                warehouse.replace(
                    "[agent.oracle.baseline]\nreorder_hours = 24.0",
                    "[agent.oracle.baseline]\nreorder_hours = \"a day\"",
                ),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "agent.oracle.baseline.reorder_hours"],
        },
        Case {
            what: "world file: negative hours in an oracle table",
            file: Some((
                "oracle-hours.toml",
                warehouse.replace("target_hours = 18.0", "target_hours = -18.0"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "agent.oracle.lean_market.target_hours"],
        },
        Case {
            what: "world file: an oracle carrier the world does not have",
            file: Some((
                "oracle-carrier.toml",
                warehouse.replace("carrier = 0", "carrier = 9"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "agent.oracle.service_crunch.carrier"],
        },
        Case {
            what: "run: --agent-opt for an oracle label the world does not have",
            file: None,
            args: &[
                "run",
                "worlds/warehouse.toml",
                "--agent",
                "oracle",
                "--agent-opt",
                "peak.reorder_hours=5",
                "--no-trace",
            ],
            code: 2,
            expect: &["agent `oracle`: option `peak`"],
        },
        Case {
            what: "world file: missing",
            file: None,
            args: &["check", "worlds/no-such-world.toml"],
            code: 2,
            expect: &["worlds/no-such-world.toml"],
        },
        Case {
            what: "trace: missing column",
            file: Some((
                "missing-column.jsonl",
                rows(2) + &row(2, "1.0").replace(",\"regime\":\"x\"", ""),
            )),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:3", "regime"],
        },
        Case {
            what: "trace: a CSV header without `reward`",
            file: Some((
                "no-reward.csv",
                "run_id,seed,algorithm_id,task,step,episode,episode_step,rewrd,regime,regime_origin,terminated,truncated,ceiling\n\
                 r,0,a,t,0,0,0,1.0,x,initial,false,false,\n"
                    .into(),
            )),
            args: &["eval", "{file}"],
            code: 2,
            // The header's line, before any row is read.
            expect: &["{file}:1", "no `reward` column"],
        },
        Case {
            what: "trace: wrong type",
            file: Some(("wrong-type.jsonl", rows(1) + &row(1, "\"lots\""))),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:2"],
        },
        Case {
            what: "trace: NaN reward (written as null)",
            file: Some(("nan.jsonl", rows(1) + &row(1, "null"))),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:2"],
        },
        Case {
            what: "trace: non-contiguous steps",
            file: Some(("gap.jsonl", rows(2) + &row(5, "1.0"))),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:3"],
        },
        Case {
            what: "trace: interleaved runs",
            file: Some((
                "interleaved.jsonl",
                rows(2)
                    + &row(0, "1.0").replace("\"run_id\":\"r\"", "\"run_id\":\"q\"")
                    + &row(2, "1.0"),
            )),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:4"],
        },
        Case {
            what: "trace: torn last line (a killed writer)",
            file: Some(("torn.jsonl", rows(3) + &row(3, "1.0")[..40])),
            args: &["eval", "{file}"],
            code: 0,
            expect: &["{file}: line 4", "torn"],
        },
        Case {
            what: "trace: episodes export without transitions",
            file: Some(("no-transitions.jsonl", rows(3))),
            args: &["episodes", "{file}", "--out", "{file}.episodes.jsonl"],
            code: 2,
            expect: &["{file}", "--record-transitions"],
        },
        Case {
            what: "run: unknown agent",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--agent",
                "oracle",
                "--no-trace",
            ],
            code: 2,
            expect: &["unknown agent `oracle`", "balance"],
        },
        Case {
            what: "run: an unknown role in --agent",
            file: None,
            args: &[
                "run",
                "worlds/enterprise.toml",
                "--agent",
                "warehouse=base-stock,sales=random",
                "--no-trace",
            ],
            code: 2,
            expect: &["--agent names unknown role `sales`", "warehouse, logistics"],
        },
        Case {
            what: "run: a role agent that has no form for its role",
            file: None,
            args: &[
                "run",
                "worlds/enterprise.toml",
                "--agent",
                "warehouse=oracle,logistics=random",
                "--no-trace",
            ],
            code: 2,
            expect: &["unknown agent `oracle`", "base-stock"],
        },
        Case {
            what: "run: unknown --notify level",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--notify",
                "loud",
                "--no-trace",
            ],
            code: 2,
            expect: &["unknown notify level `loud`", "none, flag, delta, label"],
        },
        Case {
            what: "run: --resume with a file that is not a checkpoint",
            file: Some(("not-a-checkpoint.json", "{\"step\": 3}".into())),
            args: &["run", "--resume", "{file}"],
            code: 2,
            expect: &["{file}", "not a perennial checkpoint"],
        },
        Case {
            what: "run: --trace equal to the world file",
            file: Some(("same.toml", WORLD.into())),
            args: &["run", "{file}", "--steps", "5", "--trace", "{file}"],
            code: 2,
            expect: &["is the same file as the world file"],
        },
        Case {
            what: "run: --trace on a device",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--steps",
                "5",
                "--trace",
                "/dev/full",
            ],
            code: 2,
            expect: &["/dev/full: is a device"],
        },
        Case {
            what: "run: --checkpoint is a directory",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--no-trace",
                "--checkpoint-every",
                "1000",
                "--checkpoint",
                "/",
            ],
            code: 2,
            expect: &["/: is a directory"],
        },
        Case {
            what: "run: --format csv into a .jsonl file",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--format",
                "csv",
                "--trace",
                "/nonexistent/t.jsonl",
            ],
            code: 2,
            expect: &["the extension says jsonl but the format is csv"],
        },
        Case {
            what: "run: --run-id that escapes runs/",
            file: None,
            args: &["run", "worlds/cartpole.toml", "--run-id", "../../x"],
            code: 2,
            expect: &["--run-id", "starts with `.`"],
        },
        Case {
            what: "run: empty --run-id",
            file: None,
            args: &["run", "worlds/cartpole.toml", "--run-id", ""],
            code: 2,
            expect: &["--run-id is empty"],
        },
        Case {
            what: "run: --window-steps near u64::MAX",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--no-trace",
                "--window-steps",
                "18446744073709551615",
            ],
            code: 2,
            expect: &["--window-steps is 18446744073709551615"],
        },
        Case {
            what: "run: --part-seconds negative",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--format",
                "parquet",
                "--part-seconds",
                "-1",
            ],
            code: 2,
            expect: &["--part-seconds is -1; give a number of seconds, 0 or more"],
        },
        Case {
            what: "run: --part-seconds with JSON Lines",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--format",
                "jsonl",
                "--part-seconds",
                "0",
            ],
            code: 2,
            expect: &["--part-seconds applies to Parquet traces only"],
        },
        Case {
            what: "run: --part-seconds 1e300",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--format",
                "parquet",
                "--part-seconds",
                "1e300",
            ],
            code: 2,
            expect: &["--part-seconds is 1e300 seconds, more than a run can last"],
        },
        Case {
            what: "world file: 4e9 SKUs",
            file: Some((
                "many-skus.toml",
                warehouse.replace("skus = 8", "skus = 4000000000"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:", "world.params.skus", "use at most 10000"],
        },
        Case {
            what: "world file: a stock_scale that makes observations infinite",
            file: Some((
                "tiny-scale.toml",
                warehouse.replace("skus = 8", "skus = 8\nstock_scale = 1e-310"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["world.params.stock_scale", "use at least 0.001"],
        },
        Case {
            what: "world file: a task with a newline",
            file: Some((
                "newline-task.toml",
                warehouse.replace("task = \"warehouse\"", "task = \"ware\\nhouse\""),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["world.params.task", "contains '\\n'"],
        },
        Case {
            what: "world file: stochastic weights whose sum is infinite",
            file: Some((
                "huge-weights.toml",
                format!(
                    "{WORLD}\n[schedule]\nplan = \"stochastic\"\nlabels = [\"a\", \"b\"]\nweights = [1e308, 1e308]\nmin_dwell = 1\nmean_dwell = 5.0\n"
                ),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}", "finite sum"],
        },
        Case {
            what: "world file: a cycle schedule with no labels",
            file: Some((
                "no-labels.toml",
                format!("{WORLD}\n[schedule]\nplan = \"cycle\"\nlabels = []\nevery = 100\n"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}", "schedule.labels", "name at least one regime label"],
        },
        Case {
            what: "world file: negative SKU count",
            file: Some((
                "negative-skus.toml",
                warehouse.replace("skus = 8", "skus = -3"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:16", "world.params.skus"],
        },
        Case {
            what: "world file: fractional whole-number parameter",
            file: Some((
                "fractional.toml",
                WORLD.replace("gravity = 12.0", "max_episode_steps = 2.5"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["{file}:9", "must be a whole number"],
        },
        Case {
            what: "world file: an agent `run` does not know",
            file: Some((
                "bad-agent.toml",
                format!("{WORLD}\n[harness]\nagent = \"oracle\"\n"),
            )),
            args: &["check", "{file}"],
            code: 2,
            expect: &["harness.agent", "no agent `oracle`", "balance"],
        },
        Case {
            what: "world file: /dev/zero",
            file: None,
            args: &["check", "/dev/zero"],
            code: 2,
            expect: &["/dev/zero", "larger than 16777216 bytes"],
        },
        Case {
            what: "sweep file: /dev/zero",
            file: None,
            args: &["sweep", "/dev/zero"],
            code: 2,
            expect: &["/dev/zero", "larger than 16777216 bytes"],
        },
        Case {
            what: "trace: a ceiling below the reward",
            file: Some((
                "above-ceiling.jsonl",
                rows(2).replace("\"ceiling\":null", "\"ceiling\":0.5"),
            )),
            args: &["eval", "{file}"],
            code: 0,
            expect: &["{file}:1", "above its ceiling 0.5"],
        },
        Case {
            what: "trace: /dev/zero",
            file: None,
            args: &["eval", "/dev/zero"],
            code: 2,
            expect: &["/dev/zero:1", "longer than 16777216 bytes"],
        },
        Case {
            what: "fork: no rollouts (K = 0)",
            file: None,
            args: &["fork", "{dir}/any.ckpt.json", "--rollouts", "0", "--steps", "24"],
            code: 2,
            expect: &["--rollouts must be at least 1"],
        },
        Case {
            what: "fork: too many rollouts (K = u64::MAX)",
            file: None,
            args: &[
                "fork",
                "{dir}/any.ckpt.json",
                "--rollouts",
                "18446744073709551615",
                "--steps",
                "24",
            ],
            code: 2,
            expect: &["--rollouts is 18446744073709551615", "use at most 10000"],
        },
        Case {
            what: "fork: rollouts of no steps (H = 0)",
            file: None,
            args: &["fork", "{dir}/any.ckpt.json", "--rollouts", "2", "--steps", "0"],
            code: 2,
            expect: &["--steps must be at least 1"],
        },
        Case {
            what: "fork: SOURCE is a trace",
            file: None,
            args: &["fork", "{dir}/ok-trace.jsonl", "--rollouts", "2", "--steps", "24"],
            code: 2,
            expect: &["ok-trace.jsonl", "this is a trace", "--checkpoint-every"],
        },
        Case {
            what: "fork: SOURCE is JSON but not a checkpoint (a snapshot, another tool's file)",
            file: Some((
                "snapshot.json",
                r#"{"version":1,"step":500,"env":{},"hash":"0"}"#.into(),
            )),
            args: &["fork", "{file}", "--rollouts", "2", "--steps", "24"],
            code: 2,
            expect: &["{file}", "not a perennial checkpoint", "--checkpoint-every"],
        },
        Case {
            what: "trace: rows that are JSON arrays",
            file: Some((
                "array.jsonl",
                "[\"r\",0,\"a\",\"t\",0,0,0,1.0,{},{},\"x\",\"initial\",false,false,null]\n".into(),
            )),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:1", "one JSON object"],
        },
        Case {
            what: "trace: identity columns change mid-run",
            file: Some((
                "identity.jsonl",
                rows(2) + &row(2, "1.0").replace("\"seed\":0", "\"seed\":1"),
            )),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:3", "changes its `seed` mid-run"],
        },
        Case {
            what: "trace: a step of u64::MAX",
            file: Some(("wrap.jsonl", row(u64::MAX, "1.0"))),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:1", "would wrap"],
        },
        Case {
            what: "trace: an eval window near 1e12",
            file: Some(("window.jsonl", rows(3))),
            args: &["eval", "{file}", "--window", "1000000000000"],
            code: 2,
            expect: &["smoothing window is 1000000000000"],
        },
        Case {
            what: "trace: --plot equal to the trace",
            file: Some(("plot-same.jsonl", rows(3))),
            args: &["eval", "{file}", "--plot", "{file}"],
            code: 2,
            expect: &["--plot {file} is the same file as a trace"],
        },
        Case {
            what: "run: --checkpoint equal to the trace's events table",
            file: None,
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--steps",
                "10",
                "--trace",
                "{dir}/t.jsonl",
                "--checkpoint-every",
                "5",
                "--checkpoint",
                "{dir}/t.events.jsonl",
            ],
            code: 2,
            expect: &["is the same file as the trace's events table"],
        },
        Case {
            what: "trace: the same trace given twice",
            file: Some(("twice.jsonl", rows(3))),
            args: &["eval", "{file}", "{file}"],
            code: 2,
            expect: &["{file} is given twice; give each trace once"],
        },
        Case {
            what: "trace: --profile-plot equal to the trace",
            file: Some(("profile-same.jsonl", rows(3))),
            args: &["eval", "{file}", "--profile-plot", "{file}"],
            code: 2,
            // It used to overwrite the trace with the SVG after scoring it.
            expect: &["--profile-plot {file} is the same file as a trace"],
        },
        Case {
            what: "trace: --plot equal to a reference trace",
            file: Some(("plot-reference.jsonl", rows(3))),
            args: &["eval", "{dir}/ok-trace.jsonl", "--reference", "{file}", "--plot", "{file}"],
            code: 2,
            expect: &["--plot {file} is the same file as a reference"],
        },
        Case {
            what: "trace: not Parquet, named .parquet",
            file: Some(("fake.parquet", "run_id,step\nr,0\n".into())),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}", "not a readable Parquet file"],
        },
        Case {
            what: "trace: an empty Parquet directory",
            file: None,
            args: &["eval", "{dir}/empty.parquet"],
            code: 2,
            expect: &["empty.parquet", "holds no part files"],
        },
        Case {
            what: "trace: a Parquet part without the `reward` column",
            file: None,
            args: &["eval", "{dir}/no-reward.parquet"],
            code: 2,
            expect: &["no-reward.parquet/part-00000.parquet", "no column `reward`"],
        },
        Case {
            what: "trace: a Parquet part whose `step` is a string",
            file: None,
            args: &["eval", "{dir}/string-step.parquet"],
            code: 2,
            expect: &["string-step.parquet/part-00000.parquet", "column `step`"],
        },
        Case {
            what: "run: --format parquet onto a regular file",
            file: Some(("plain.parquet", "not a directory\n".into())),
            args: &[
                "run",
                "worlds/cartpole.toml",
                "--steps",
                "10",
                "--format",
                "parquet",
                "--trace",
                "{file}",
            ],
            code: 2,
            expect: &["{file}", "a directory of part files"],
        },
        Case {
            what: "trace: an events table given as the trace",
            file: Some((
                "only.events.jsonl",
                "{\"run_id\":\"r\",\"step\":0,\"event\":\"failure\"}\n".into(),
            )),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file} is an events table, not a trace"],
        },
        Case {
            what: "events: a torn last line (a killed writer)",
            file: Some(("events-torn.jsonl", rows(3))),
            args: &["eval", "{file}", "--events"],
            code: 0,
            expect: &["events-torn.events.jsonl: line 2 is torn"],
        },
        Case {
            what: "events: a file that is not an events table",
            file: Some(("events-foreign.jsonl", rows(3))),
            args: &["eval", "{file}", "--events"],
            code: 0,
            expect: &["events-foreign.events.jsonl: line 1 is not an event"],
        },
        Case {
            what: "events: no table beside the trace",
            file: Some(("events-missing.jsonl", rows(3))),
            args: &["eval", "{file}", "--events"],
            code: 0,
            expect: &["{file}: no events table beside this trace"],
        },
        Case {
            what: "sweep: an unknown trace format",
            file: Some((
                "bad-format.toml",
                "[sweep]\nname = \"s\"\nworlds = [\"worlds/cartpole.toml\"]\nagents = [\"random\"]\nseeds = [0]\nsteps = 10\nformat = \"feather\"\n".into(),
            )),
            args: &["sweep", "{file}"],
            code: 2,
            expect: &["{file}:7", "sweep.format", "use jsonl, csv or parquet"],
        },
        Case {
            what: "sweep: 1e11 seeds",
            file: Some((
                "many-seeds.toml",
                "[sweep]\nname = \"s\"\nworlds = [\"worlds/cartpole.toml\"]\nagents = [\"random\"]\nseeds = { from = 0, count = 100000000000 }\nsteps = 10\n".into(),
            )),
            args: &["sweep", "{file}", "--plan-json"],
            code: 2,
            // Refused before a seed list is built (it used to abort, out of memory).
            expect: &["{file}:5", "sweep.seeds.count", "at most 100000 runs"],
        },
        Case {
            what: "sweep: runs beyond the limit as worlds × agents × seeds",
            file: Some((
                "many-runs.toml",
                "[sweep]\nname = \"s\"\nworlds = [\"worlds/cartpole.toml\"]\nagents = [\"random\", \"balance\"]\nseeds = { from = 0, count = 50001 }\nsteps = 10\n".into(),
            )),
            args: &["sweep", "{file}", "--plan-json"],
            code: 2,
            expect: &["{file}:5", "100002 runs (1 worlds × 2 agents × 50001 seeds)"],
        },
        Case {
            what: "sweep: part_seconds with a CSV trace",
            file: Some((
                "csv-parts.toml",
                "[sweep]\nname = \"s\"\nworlds = [\"worlds/cartpole.toml\"]\nagents = [\"random\"]\nseeds = [0]\nsteps = 10\nformat = \"csv\"\npart_seconds = 0\n".into(),
            )),
            args: &["sweep", "{file}"],
            code: 2,
            expect: &["{file}:8", "sweep.part_seconds", "part_seconds is for Parquet traces"],
        },
        Case {
            what: "trace: episodes --out on a device",
            file: Some(("out-device.jsonl", rows(3))),
            args: &["episodes", "{file}", "--out", "/dev/full"],
            code: 2,
            expect: &["/dev/full: is a device"],
        },
        Case {
            what: "export: l2logger --out is a regular file",
            file: Some(("l2-out-file", "not a directory\n".into())),
            args: &["export", "l2logger", "{dir}/ok-trace.jsonl", "--out", "{file}"],
            code: 2,
            expect: &["{file}: is not a directory", "give --out a directory"],
        },
        Case {
            what: "sweep: --out is a regular file",
            file: Some(("out-file", "not a directory\n".into())),
            args: &["sweep", "{dir}/ok-sweep.toml", "--out", "{file}"],
            code: 2,
            expect: &["{file}: is not a directory", "give --out a directory"],
        },
        Case {
            what: "bench run --collect: a run-exits file that is not one",
            file: Some(("exits-list.json", "[1, 2]\n".into())),
            args: &[
                "bench", "run", "cartpole-drift", "--agent", "random", "--out", "{dir}/bench-out",
                "--collect", "{file}",
            ],
            code: 2,
            expect: &["{file}: not a run-exits file"],
        },
        Case {
            what: "bench run --collect: run exits of a folder that is no sweep of the bench run",
            file: Some(("exits-foreign.json", "{\"/elsewhere\": {}}\n".into())),
            args: &[
                "bench", "run", "cartpole-drift", "--agent", "random", "--out", "{dir}/bench-out",
                "--collect", "{file}",
            ],
            code: 2,
            expect: &["{file}: /elsewhere is not the folder of a sweep of this bench run"],
        },
        Case {
            what: "trace: a `bound` that is a string",
            file: Some((
                "bound-string.jsonl",
                rows(1) + &row(1, "1.0").replace("\"ceiling\":null", "\"ceiling\":null,\"bound\":\"high\""),
            )),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:2"],
        },
        Case {
            what: "trace: a `bound` of 1e999",
            file: Some((
                "bound-huge.jsonl",
                rows(1) + &row(1, "1.0").replace("\"ceiling\":null", "\"ceiling\":null,\"bound\":1e999"),
            )),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:2"],
        },
        Case {
            what: "trace: a CSV `bound` cell that is not a number",
            file: Some((
                "bound-cell.csv",
                "run_id,seed,algorithm_id,task,step,episode,episode_step,reward,regime,regime_origin,terminated,truncated,ceiling,bound\n\
                 r,0,a,t,0,0,0,1.0,x,initial,false,false,,high\n"
                    .into(),
            )),
            args: &["eval", "{file}"],
            code: 2,
            expect: &["{file}:2", "column `bound`"],
        },
    ]
}

/// Files (and, named with a trailing `/`, folders) the cases reach as `{dir}/NAME`: the
/// second file of a case that needs two, such as an events table beside its trace.
fn beside() -> Vec<(&'static str, String)> {
    vec![
        ("empty.parquet/", String::new()),
        (
            "events-torn.events.jsonl",
            r#"{"run_id":"r","step":1,"event":"episode_end","from_regime":null,"to_regime":null,"origin":null,"kind":null,"target":null,"start":null,"duration":null,"episode":0,"terminated":true,"truncated":false}
{"run_id":"r","step":2,"event":"fail"#
                .into(),
        ),
        (
            "events-foreign.events.jsonl",
            "time,price\n1,2\n".into(),
        ),
        (
            "ok-trace.jsonl",
            rows(3),
        ),
        (
            "ok-sweep.toml",
            "[sweep]\nname = \"s\"\nworlds = [\"worlds/cartpole.toml\"]\nagents = [\"random\"]\nseeds = [0]\nsteps = 10\n".into(),
        ),
    ]
}

/// Writes `<dir>/<name>/part-00000.parquet`: a valid Parquet file of two trace rows with
/// the trace's columns, except that `reward` is left out (`no_reward`) or `step` is text.
fn write_parquet_trace(dir: &Path, name: &str, no_reward: bool) {
    use arrow_array::{
        ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array,
    };
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let text = |v: &str| -> ArrayRef { Arc::new(StringArray::from(vec![v, v])) };
    let counter = || -> ArrayRef { Arc::new(UInt64Array::from(vec![0, 1])) };
    let mut columns: Vec<(&str, DataType, ArrayRef)> = vec![
        ("run_id", DataType::Utf8, text("r")),
        (
            "seed",
            DataType::UInt64,
            Arc::new(UInt64Array::from(vec![0, 0])),
        ),
        ("algorithm_id", DataType::Utf8, text("a")),
        ("task", DataType::Utf8, text("t")),
    ];
    if no_reward {
        columns.push(("step", DataType::UInt64, counter()));
    } else {
        columns.push((
            "step",
            DataType::Utf8,
            Arc::new(StringArray::from(vec!["0", "1"])),
        ));
    }
    columns.extend([
        (
            "episode",
            DataType::UInt64,
            Arc::new(UInt64Array::from(vec![0, 0])) as ArrayRef,
        ),
        ("episode_step", DataType::UInt64, counter()),
    ]);
    if !no_reward {
        columns.push((
            "reward",
            DataType::Float64,
            Arc::new(Float64Array::from(vec![1.0, 1.0])),
        ));
    }
    columns.extend([
        ("regime", DataType::Utf8, text("x")),
        ("regime_origin", DataType::Utf8, text("initial")),
        (
            "terminated",
            DataType::Boolean,
            Arc::new(BooleanArray::from(vec![false, false])) as ArrayRef,
        ),
        (
            "truncated",
            DataType::Boolean,
            Arc::new(BooleanArray::from(vec![false, false])),
        ),
        (
            "ceiling",
            DataType::Float64,
            Arc::new(Float64Array::from(vec![None, None])),
        ),
    ]);
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, ty, _)| Field::new(*name, ty.clone(), *name == "ceiling"))
            .collect::<Vec<_>>(),
    ));
    let batch =
        RecordBatch::try_new(schema.clone(), columns.into_iter().map(|c| c.2).collect()).unwrap();
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let file = std::fs::File::create(folder.join("part-00000.parquet")).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("perennial-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn every_hostile_input_gets_its_documented_message() {
    let dir = dir();
    let dir_text = dir.display().to_string();
    let mut table = String::from(
        "# Hostile inputs and the messages they get\n\n\
         Generated by `tests/hostile_inputs.rs`, which checks it stays current \
         (`PERENNIAL_BLESS=1 cargo test --release --test hostile_inputs` rewrites it). \
         `<dir>` stands for the folder the test wrote the file in.\n\n\
         | input | command | exit | message |\n|---|---|---|---|\n",
    );
    for (name, text) in beside() {
        let p = dir.join(name);
        if name.ends_with('/') {
            std::fs::create_dir_all(&p).unwrap();
        } else {
            std::fs::write(&p, text).unwrap();
        }
    }
    write_parquet_trace(&dir, "no-reward.parquet", true);
    write_parquet_trace(&dir, "string-step.parquet", false);
    for case in cases() {
        let file = match &case.file {
            Some((name, text)) => {
                let p = dir.join(name);
                std::fs::write(&p, text).unwrap();
                p.display().to_string()
            }
            None => String::new(),
        };
        let args: Vec<String> = case
            .args
            .iter()
            .map(|a| a.replace("{file}", &file).replace("{dir}", &dir_text))
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_perennial"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let message = if case.code == 0 {
            stdout
                .lines()
                .chain(stderr.lines())
                .find(|l| l.contains("torn") || l.contains("warning"))
                .unwrap_or("")
                .to_string()
        } else {
            stderr.trim().to_string()
        };
        assert_eq!(
            out.status.code(),
            Some(case.code),
            "{}: {message}",
            case.what
        );
        assert!(!stderr.contains("panicked"), "{}: {stderr}", case.what);
        for fragment in case.expect {
            let fragment = fragment.replace("{file}", &file);
            assert!(
                message.contains(&fragment),
                "{}: `{fragment}` missing from: {message}",
                case.what
            );
        }
        let shown = |s: &str| s.replace(&dir_text, "<dir>").replace('|', "\\|");
        table.push_str(&format!(
            "| {} | `perennial {}` | {} | {} |\n",
            case.what,
            shown(&args.join(" ")),
            case.code,
            shown(&message.replace('\n', " "))
        ));
    }
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("HOSTILE_INPUTS.md");
    let current = std::fs::read_to_string(&committed).unwrap_or_default();
    // The sections after the generated table (`## ...`) record cases of several steps,
    // each checked by the test named in its rows; blessing keeps them.
    let (generated, sections) = current.split_once("\n## ").unwrap_or((&current, ""));
    if std::env::var_os("PERENNIAL_BLESS").is_some() {
        let rest = if sections.is_empty() {
            String::new()
        } else {
            format!("\n## {sections}")
        };
        std::fs::write(&committed, format!("{table}{rest}")).unwrap();
    }
    assert!(
        generated == table,
        "HOSTILE_INPUTS.md is stale; rerun with PERENNIAL_BLESS=1 to rewrite it. New table:\n{table}"
    );
    // Kept when the test fails, to look at.
    let _ = std::fs::remove_dir_all(&dir);
}
