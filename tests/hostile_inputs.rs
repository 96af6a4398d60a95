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
    /// The command line after `perennial`, split at each space (so a trailing space is
    /// an empty last argument); `{file}` is replaced by the written file's path.
    args: &'static str,
    /// Expected exit code.
    code: i32,
    /// Fragments the message must contain (`{file}` replaced as above).
    expect: &'static [&'static str],
}

impl Case {
    /// `perennial ARGS` with no file written for it, refused with exit 2.
    fn refused(what: &'static str, args: &'static str, expect: &'static [&'static str]) -> Case {
        Case {
            what,
            file: None,
            args,
            code: 2,
            expect,
        }
    }

    /// `perennial ARGS` with the file `name` holding `text`, refused with exit 2.
    fn refused_file(
        what: &'static str,
        name: &'static str,
        text: impl Into<String>,
        args: &'static str,
        expect: &'static [&'static str],
    ) -> Case {
        Case {
            file: Some((name, text.into())),
            ..Case::refused(what, args, expect)
        }
    }

    /// `perennial check` of the world file `name` holding `text`, refused with exit 2.
    fn check(
        what: &'static str,
        name: &'static str,
        text: impl Into<String>,
        expect: &'static [&'static str],
    ) -> Case {
        Case::refused_file(what, name, text, "check {file}", expect)
    }

    /// `perennial eval` of the trace `name` holding `text`, refused with exit 2.
    fn eval(
        what: &'static str,
        name: &'static str,
        text: impl Into<String>,
        expect: &'static [&'static str],
    ) -> Case {
        Case::refused_file(what, name, text, "eval {file}", expect)
    }

    /// `perennial ARGS` with the file `name` holding `text`, read with a warning and exit 0.
    fn warns(
        what: &'static str,
        name: &'static str,
        text: impl Into<String>,
        args: &'static str,
        expect: &'static [&'static str],
    ) -> Case {
        Case {
            code: 0,
            ..Case::refused_file(what, name, text, args, expect)
        }
    }
}

const WORLD: &str = "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[[regimes]]\nlabel = \"b\"\nconditions = { gravity = 12.0 }\n";

const ROW: &str = r#"{"run_id":"r","seed":0,"algorithm_id":"a","task":"t","step":STEP,"episode":0,"episode_step":STEP,"reward":REWARD,"components":{},"payout":{},"regime":"x","regime_origin":"initial","terminated":false,"truncated":false,"ceiling":null}"#;

/// A sweep file of one run of 10 steps.
const SWEEP: &str = "[sweep]\nname = \"s\"\nworlds = [\"worlds/cartpole.toml\"]\nagents = [\"random\"]\nseeds = [0]\nsteps = 10\n";

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
        Case::check(
            "world file: TOML syntax error",
            "syntax.toml",
            "[world\nkind = \"cartpole\"\n",
            &["{file}:1"],
        ),
        Case::check(
            "world file: unknown key",
            "unknown-key.toml",
            format!("{WORLD}\n[harness]\nstepz = 10\n"),
            &["{file}:12", "stepz"],
        ),
        Case::check(
            "world file: wrong type",
            "wrong-type.toml",
            WORLD.replace("gravity = 12.0", "gravity = \"high\""),
            &["{file}:9"],
        ),
        Case::check(
            "world file: unknown regime parameter",
            "unknown-param.toml",
            WORLD.replace("gravity", "gravty"),
            &[
                "{file}:9",
                "regimes.b.conditions.gravty",
                "unknown parameter",
            ],
        ),
        Case::check(
            "world file: out-of-range parameter",
            "out-of-range.toml",
            WORLD.replace("gravity = 12.0", "gravity = -1.0"),
            &["{file}:9", "out of range"],
        ),
        Case::check(
            "world file: a parameter of 1e308",
            "huge-param.toml",
            WORLD.replace("gravity = 12.0", "gravity = 1e308"),
            // The value as written, not as 309 digits.
            &["{file}:9", "`gravity` = 1e308 is out of range"],
        ),
        Case::check(
            "world file: empty regime list",
            "empty-regimes.toml",
            "regimes = []\n[world]\nkind = \"cartpole\"\n",
            &["{file}:1", "regime list is empty"],
        ),
        Case::check(
            "world file: schedule names an undefined label",
            "undefined-label.toml",
            format!("{WORLD}\n[schedule]\nplan = \"cycle\"\nlabels = [\"a\", \"c\"]\nevery = 10\n"),
            &["{file}:13", "`c`"],
        ),
        Case::check(
            "world file: unknown notify level",
            "notify-level.toml",
            format!("{WORLD}\n[notify]\nlevel = \"loud\"\n"),
            &[
                "{file}:12",
                "notify.level",
                "use one of: none, flag, delta, label",
            ],
        ),
        Case::check(
            "world file: zero capacity",
            "zero-docks.toml",
            warehouse.replace("docks = 4", "docks = 0"),
            &["{file}:", "world.params.docks"],
        ),
        Case::check(
            "world file: negative capacity",
            "negative-cash.toml",
            warehouse.replace("opening_cash = 10000.0", "opening_cash = -5.0"),
            &["{file}:", "world.params.opening_cash"],
        ),
        Case::check(
            "world file: opening cash of 1e300",
            "huge-cash.toml",
            warehouse.replace("opening_cash = 10000.0", "opening_cash = 1e300"),
            &["{file}:", "opening_cash`: is 1e300; use at most 1000000000"],
        ),
        Case::check(
            "world file: negative credit line",
            "negative-credit.toml",
            warehouse.replace(
                "opening_cash = 10000.0",
                "opening_cash = 10000.0\ncredit_limit = -1.0",
            ),
            &["{file}:", "world.params.credit_limit"],
        ),
        Case::check(
            "world file: interest rate above 1",
            "usury.toml",
            warehouse.replace(
                "opening_cash = 10000.0",
                "opening_cash = 10000.0\ninterest_rate = 2.0",
            ),
            &["{file}:", "world.params.interest_rate"],
        ),
        Case::check(
            "world file: stale readings of age 0",
            "stale-zero.toml",
            warehouse.replace(
                "opening_cash = 10000.0",
                "opening_cash = 10000.0\nstale_hours = 0",
            ),
            &["{file}:", "world.params.stale_hours"],
        ),
        Case::check(
            "world file: missing-reading rate above 1",
            "missing-rate.toml",
            warehouse.replace("stale_rate = 0.3", "missing_rate = 1.5"),
            &["{file}:", "regimes.supplier_crisis.conditions.missing_rate"],
        ),
        Case::check(
            "world file: fractional operation budget",
            "op-budget.toml",
            warehouse.replace("op_budget = 12", "op_budget = 2.5"),
            &["{file}:", "op_budget"],
        ),
        Case::check(
            "world file: an oracle table for a regime the world does not have",
            "oracle-label.toml",
            warehouse.replace("[agent.oracle.lean_market]", "[agent.oracle.lean_markt]"),
            &["{file}:", "agent.oracle.lean_markt", "lean_market"],
        ),
        Case::check(
            "world file: an unknown field in an oracle table",
            "oracle-field.toml",
            warehouse.replace(
                "[agent.oracle.peak_season]\nreorder_hours",
                "[agent.oracle.peak_season]\nreorder_hourz",
            ),
            &["{file}:", "agent.oracle.peak_season.reorder_hourz"],
        ),
        Case::check(
            "world file: a role that owns no operation",
            "role-no-op.toml",
            enterprise.replace(
                r#"ops = ["noop", "choose_carrier", "prioritize_sku", "hold_wave"]"#,
                r#"ops = ["noop"]"#,
            ),
            &["{file}:40", "roles.logistics.ops", "owns no operation"],
        ),
        Case::check(
            "world file: an operation owned by two roles",
            "op-twice.toml",
            enterprise.replace(
                r#""choose_carrier", "prioritize_sku""#,
                r#""choose_carrier", "reorder", "prioritize_sku""#,
            ),
            &[
                "{file}:40",
                "roles.logistics.ops",
                "`reorder` is owned twice",
            ],
        ),
        Case::check(
            "world file: a role owning an unknown operation",
            "unknown-op.toml",
            enterprise.replace(r#""hold_wave"]"#, r#""hold_waves"]"#),
            &["{file}:40", "roles.logistics.ops", "hold_waves"],
        ),
        Case::check(
            "world file: a per-role notify level for an unknown role",
            "notify-role.toml",
            format!("{enterprise}\n[notify]\nwarehouse = \"delta\"\npurchasing = \"flag\"\n"),
            &[
                "{file}:100",
                "notify.purchasing",
                "unknown role `purchasing`",
            ],
        ),
        Case::check(
            "world file: an oracle table of the wrong type",
            "oracle-type.toml",
            warehouse.replace(
                "[agent.oracle.baseline]\nreorder_hours = 24.0",
                "[agent.oracle.baseline]\nreorder_hours = \"a day\"",
            ),
            &["{file}:", "agent.oracle.baseline.reorder_hours"],
        ),
        Case::check(
            "world file: negative hours in an oracle table",
            "oracle-hours.toml",
            warehouse.replace("target_hours = 18.0", "target_hours = -18.0"),
            &["{file}:", "agent.oracle.lean_market.target_hours"],
        ),
        Case::check(
            "world file: an oracle carrier the world does not have",
            "oracle-carrier.toml",
            warehouse.replace("carrier = 0", "carrier = 9"),
            &["{file}:", "agent.oracle.service_crunch.carrier"],
        ),
        Case::refused(
            "run: --agent-opt for an oracle label the world does not have",
            "run worlds/warehouse.toml --agent oracle --agent-opt peak.reorder_hours=5 --no-trace",
            &["agent `oracle`: option `peak`"],
        ),
        Case::refused(
            "world file: missing",
            "check worlds/no-such-world.toml",
            &["worlds/no-such-world.toml"],
        ),
        Case::eval(
            "trace: missing column",
            "missing-column.jsonl",
            rows(2) + &row(2, "1.0").replace(",\"regime\":\"x\"", ""),
            &["{file}:3", "regime"],
        ),
        Case::eval(
            "trace: a CSV header without `reward`",
            "no-reward.csv",
            "run_id,seed,algorithm_id,task,step,episode,episode_step,rewrd,regime,regime_origin,terminated,truncated,ceiling\n\
                 r,0,a,t,0,0,0,1.0,x,initial,false,false,\n",
            // The header's line, before any row is read.
            &["{file}:1", "no `reward` column"],
        ),
        Case::eval(
            "trace: wrong type",
            "wrong-type.jsonl",
            rows(1) + &row(1, "\"lots\""),
            &["{file}:2"],
        ),
        Case::eval(
            "trace: NaN reward (written as null)",
            "nan.jsonl",
            rows(1) + &row(1, "null"),
            &["{file}:2"],
        ),
        Case::eval(
            "trace: non-contiguous steps",
            "gap.jsonl",
            rows(2) + &row(5, "1.0"),
            &["{file}:3"],
        ),
        Case::eval(
            "trace: interleaved runs",
            "interleaved.jsonl",
            rows(2)
                + &row(0, "1.0").replace("\"run_id\":\"r\"", "\"run_id\":\"q\"")
                + &row(2, "1.0"),
            &["{file}:4"],
        ),
        Case::warns(
            "trace: torn last line (a killed writer)",
            "torn.jsonl",
            rows(3) + &row(3, "1.0")[..40],
            "eval {file}",
            &["{file}: line 4", "torn"],
        ),
        Case::refused_file(
            "trace: episodes export without transitions",
            "no-transitions.jsonl",
            rows(3),
            "episodes {file} --out {file}.episodes.jsonl",
            &["{file}", "--record-transitions"],
        ),
        Case::refused(
            "run: unknown agent",
            "run worlds/cartpole.toml --agent oracle --no-trace",
            &["unknown agent `oracle`", "balance"],
        ),
        Case::refused(
            "run: an unknown role in --agent",
            "run worlds/enterprise.toml --agent warehouse=base-stock,sales=random --no-trace",
            &["--agent names unknown role `sales`", "warehouse, logistics"],
        ),
        Case::refused(
            "run: a role agent that has no form for its role",
            "run worlds/enterprise.toml --agent warehouse=oracle,logistics=random --no-trace",
            &["unknown agent `oracle`", "base-stock"],
        ),
        Case::refused(
            "run: unknown --notify level",
            "run worlds/cartpole.toml --notify loud --no-trace",
            &["unknown notify level `loud`", "none, flag, delta, label"],
        ),
        Case::refused_file(
            "run: --resume with a file that is not a checkpoint",
            "not-a-checkpoint.json",
            "{\"step\": 3}",
            "run --resume {file}",
            &["{file}", "not a perennial checkpoint"],
        ),
        Case::refused_file(
            "run: --trace equal to the world file",
            "same.toml",
            WORLD,
            "run {file} --steps 5 --trace {file}",
            &["is the same file as the world file"],
        ),
        Case::refused(
            "run: --trace on a device",
            "run worlds/cartpole.toml --steps 5 --trace /dev/full",
            &["/dev/full: is a device"],
        ),
        Case::refused(
            "run: --checkpoint is a directory",
            "run worlds/cartpole.toml --no-trace --checkpoint-every 1000 --checkpoint /",
            &["/: is a directory"],
        ),
        Case::refused(
            "run: --format csv into a .jsonl file",
            "run worlds/cartpole.toml --format csv --trace /nonexistent/t.jsonl",
            &["the extension says jsonl but the format is csv"],
        ),
        Case::refused(
            "run: --run-id that escapes runs/",
            "run worlds/cartpole.toml --run-id ../../x",
            &["--run-id", "starts with `.`"],
        ),
        Case::refused(
            "run: empty --run-id",
            "run worlds/cartpole.toml --run-id ",
            &["--run-id is empty"],
        ),
        Case::refused(
            "run: --window-steps near u64::MAX",
            "run worlds/cartpole.toml --no-trace --window-steps 18446744073709551615",
            &["--window-steps is 18446744073709551615"],
        ),
        Case::refused(
            "run: --part-seconds negative",
            "run worlds/cartpole.toml --format parquet --part-seconds -1",
            &["--part-seconds is -1; give a number of seconds, 0 or more"],
        ),
        Case::refused(
            "run: --part-seconds with JSON Lines",
            "run worlds/cartpole.toml --format jsonl --part-seconds 0",
            &["--part-seconds applies to Parquet traces only"],
        ),
        Case::refused(
            "run: --part-seconds 1e300",
            "run worlds/cartpole.toml --format parquet --part-seconds 1e300",
            &["--part-seconds is 1e300 seconds, more than a run can last"],
        ),
        Case::check(
            "world file: 4e9 SKUs",
            "many-skus.toml",
            warehouse.replace("skus = 8", "skus = 4000000000"),
            &["{file}:", "world.params.skus", "use at most 10000"],
        ),
        Case::check(
            "world file: a stock_scale that makes observations infinite",
            "tiny-scale.toml",
            warehouse.replace("skus = 8", "skus = 8\nstock_scale = 1e-310"),
            &["world.params.stock_scale", "use at least 0.001"],
        ),
        Case::check(
            "world file: a task with a newline",
            "newline-task.toml",
            warehouse.replace("task = \"warehouse\"", "task = \"ware\\nhouse\""),
            &["world.params.task", "contains '\\n'"],
        ),
        Case::check(
            "world file: stochastic weights whose sum is infinite",
            "huge-weights.toml",
            format!(
                "{WORLD}\n[schedule]\nplan = \"stochastic\"\nlabels = [\"a\", \"b\"]\nweights = [1e308, 1e308]\nmin_dwell = 1\nmean_dwell = 5.0\n"
            ),
            &["{file}", "finite sum"],
        ),
        Case::check(
            "world file: a cycle schedule with no labels",
            "no-labels.toml",
            format!("{WORLD}\n[schedule]\nplan = \"cycle\"\nlabels = []\nevery = 100\n"),
            &[
                "{file}",
                "schedule.labels",
                "name at least one regime label",
            ],
        ),
        Case::check(
            "world file: negative SKU count",
            "negative-skus.toml",
            warehouse.replace("skus = 8", "skus = -3"),
            &["{file}:16", "world.params.skus"],
        ),
        Case::check(
            "world file: fractional whole-number parameter",
            "fractional.toml",
            WORLD.replace("gravity = 12.0", "max_episode_steps = 2.5"),
            &["{file}:9", "must be a whole number"],
        ),
        Case::check(
            "world file: an agent `run` does not know",
            "bad-agent.toml",
            format!("{WORLD}\n[harness]\nagent = \"oracle\"\n"),
            &["harness.agent", "no agent `oracle`", "balance"],
        ),
        Case::refused(
            "world file: /dev/zero",
            "check /dev/zero",
            &["/dev/zero", "larger than 16777216 bytes"],
        ),
        Case::refused(
            "sweep file: /dev/zero",
            "sweep /dev/zero",
            &["/dev/zero", "larger than 16777216 bytes"],
        ),
        Case::warns(
            "trace: a ceiling below the reward",
            "above-ceiling.jsonl",
            rows(2).replace("\"ceiling\":null", "\"ceiling\":0.5"),
            "eval {file}",
            &["{file}:1", "above its ceiling 0.5"],
        ),
        Case::refused(
            "trace: /dev/zero",
            "eval /dev/zero",
            &["/dev/zero:1", "longer than 16777216 bytes"],
        ),
        Case::refused(
            "fork: no rollouts (K = 0)",
            "fork {dir}/any.ckpt.json --rollouts 0 --steps 24",
            &["--rollouts must be at least 1"],
        ),
        Case::refused(
            "fork: too many rollouts (K = u64::MAX)",
            "fork {dir}/any.ckpt.json --rollouts 18446744073709551615 --steps 24",
            &["--rollouts is 18446744073709551615", "use at most 10000"],
        ),
        Case::refused(
            "fork: rollouts of no steps (H = 0)",
            "fork {dir}/any.ckpt.json --rollouts 2 --steps 0",
            &["--steps must be at least 1"],
        ),
        Case::refused(
            "fork: SOURCE is a trace",
            "fork {dir}/ok-trace.jsonl --rollouts 2 --steps 24",
            &["ok-trace.jsonl", "this is a trace", "--checkpoint-every"],
        ),
        Case::refused_file(
            "fork: SOURCE is JSON but not a checkpoint (a snapshot, another tool's file)",
            "snapshot.json",
            r#"{"version":1,"step":500,"env":{},"hash":"0"}"#,
            "fork {file} --rollouts 2 --steps 24",
            &["{file}", "not a perennial checkpoint", "--checkpoint-every"],
        ),
        Case::eval(
            "trace: rows that are JSON arrays",
            "array.jsonl",
            "[\"r\",0,\"a\",\"t\",0,0,0,1.0,{},{},\"x\",\"initial\",false,false,null]\n",
            &["{file}:1", "one JSON object"],
        ),
        Case::eval(
            "trace: identity columns change mid-run",
            "identity.jsonl",
            rows(2) + &row(2, "1.0").replace("\"seed\":0", "\"seed\":1"),
            &["{file}:3", "changes its `seed` mid-run"],
        ),
        Case::eval(
            "trace: a step of u64::MAX",
            "wrap.jsonl",
            row(u64::MAX, "1.0"),
            &["{file}:1", "would wrap"],
        ),
        Case::refused_file(
            "trace: an eval window near 1e12",
            "window.jsonl",
            rows(3),
            "eval {file} --window 1000000000000",
            &["smoothing window is 1000000000000"],
        ),
        Case::refused_file(
            "trace: --plot equal to the trace",
            "plot-same.jsonl",
            rows(3),
            "eval {file} --plot {file}",
            &["--plot {file} is the same file as a trace"],
        ),
        Case::refused(
            "run: --checkpoint equal to the trace's events table",
            "run worlds/cartpole.toml --steps 10 --trace {dir}/t.jsonl --checkpoint-every 5 --checkpoint {dir}/t.events.jsonl",
            &["is the same file as the trace's events table"],
        ),
        Case::refused_file(
            "trace: the same trace given twice",
            "twice.jsonl",
            rows(3),
            "eval {file} {file}",
            &["{file} is given twice; give each trace once"],
        ),
        Case::refused_file(
            "trace: --profile-plot equal to the trace",
            "profile-same.jsonl",
            rows(3),
            "eval {file} --profile-plot {file}",
            // It used to overwrite the trace with the SVG after scoring it.
            &["--profile-plot {file} is the same file as a trace"],
        ),
        Case::refused_file(
            "trace: --plot equal to a reference trace",
            "plot-reference.jsonl",
            rows(3),
            "eval {dir}/ok-trace.jsonl --reference {file} --plot {file}",
            &["--plot {file} is the same file as a reference"],
        ),
        Case::eval(
            "trace: not Parquet, named .parquet",
            "fake.parquet",
            "run_id,step\nr,0\n",
            &["{file}", "not a readable Parquet file"],
        ),
        Case::refused(
            "trace: an empty Parquet directory",
            "eval {dir}/empty.parquet",
            &["empty.parquet", "holds no part files"],
        ),
        Case::refused(
            "trace: a Parquet part without the `reward` column",
            "eval {dir}/no-reward.parquet",
            &["no-reward.parquet/part-00000.parquet", "no column `reward`"],
        ),
        Case::refused(
            "trace: a Parquet part whose `step` is a string",
            "eval {dir}/string-step.parquet",
            &["string-step.parquet/part-00000.parquet", "column `step`"],
        ),
        Case::refused_file(
            "run: --format parquet onto a regular file",
            "plain.parquet",
            "not a directory\n",
            "run worlds/cartpole.toml --steps 10 --format parquet --trace {file}",
            &["{file}", "a directory of part files"],
        ),
        Case::eval(
            "trace: an events table given as the trace",
            "only.events.jsonl",
            "{\"run_id\":\"r\",\"step\":0,\"event\":\"failure\"}\n",
            &["{file} is an events table, not a trace"],
        ),
        Case::warns(
            "events: a torn last line (a killed writer)",
            "events-torn.jsonl",
            rows(3),
            "eval {file} --events",
            &["events-torn.events.jsonl: line 2 is torn"],
        ),
        Case::warns(
            "events: a file that is not an events table",
            "events-foreign.jsonl",
            rows(3),
            "eval {file} --events",
            &["events-foreign.events.jsonl: line 1 is not an event"],
        ),
        Case::warns(
            "events: no table beside the trace",
            "events-missing.jsonl",
            rows(3),
            "eval {file} --events",
            &["{file}: no events table beside this trace"],
        ),
        Case::refused_file(
            "sweep: an unknown trace format",
            "bad-format.toml",
            format!("{SWEEP}format = \"feather\"\n"),
            "sweep {file}",
            &["{file}:7", "sweep.format", "use jsonl, csv or parquet"],
        ),
        Case::refused_file(
            "sweep: 1e11 seeds",
            "many-seeds.toml",
            SWEEP.replace("seeds = [0]", "seeds = { from = 0, count = 100000000000 }"),
            "sweep {file} --plan-json",
            // Refused before a seed list is built (it used to abort, out of memory).
            &["{file}:5", "sweep.seeds.count", "at most 100000 runs"],
        ),
        Case::refused_file(
            "sweep: runs beyond the limit as worlds × agents × seeds",
            "many-runs.toml",
            SWEEP
                .replace("[\"random\"]", "[\"random\", \"balance\"]")
                .replace("seeds = [0]", "seeds = { from = 0, count = 50001 }"),
            "sweep {file} --plan-json",
            &[
                "{file}:5",
                "100002 runs (1 worlds × 2 agents × 50001 seeds)",
            ],
        ),
        Case::refused_file(
            "sweep: part_seconds with a CSV trace",
            "csv-parts.toml",
            format!("{SWEEP}format = \"csv\"\npart_seconds = 0\n"),
            "sweep {file}",
            &[
                "{file}:8",
                "sweep.part_seconds",
                "part_seconds is for Parquet traces",
            ],
        ),
        Case::refused_file(
            "trace: episodes --out on a device",
            "out-device.jsonl",
            rows(3),
            "episodes {file} --out /dev/full",
            &["/dev/full: is a device"],
        ),
        Case::refused_file(
            "export: l2logger --out is a regular file",
            "l2-out-file",
            "not a directory\n",
            "export l2logger {dir}/ok-trace.jsonl --out {file}",
            &["{file}: is not a directory", "give --out a directory"],
        ),
        Case::refused_file(
            "sweep: --out is a regular file",
            "out-file",
            "not a directory\n",
            "sweep {dir}/ok-sweep.toml --out {file}",
            &["{file}: is not a directory", "give --out a directory"],
        ),
        Case::refused_file(
            "bench run --collect: a run-exits file that is not one",
            "exits-list.json",
            "[1, 2]\n",
            "bench run cartpole-drift --agent random --out {dir}/bench-out --collect {file}",
            &["{file}: not a run-exits file"],
        ),
        Case::refused_file(
            "bench run --collect: run exits of a folder that is no sweep of the bench run",
            "exits-foreign.json",
            "{\"/elsewhere\": {}}\n",
            "bench run cartpole-drift --agent random --out {dir}/bench-out --collect {file}",
            &["{file}: /elsewhere is not the folder of a sweep of this bench run"],
        ),
        Case::eval(
            "trace: a `bound` that is a string",
            "bound-string.jsonl",
            rows(1)
                + &row(1, "1.0").replace("\"ceiling\":null", "\"ceiling\":null,\"bound\":\"high\""),
            &["{file}:2"],
        ),
        Case::eval(
            "trace: a `bound` of 1e999",
            "bound-huge.jsonl",
            rows(1)
                + &row(1, "1.0").replace("\"ceiling\":null", "\"ceiling\":null,\"bound\":1e999"),
            &["{file}:2"],
        ),
        Case::eval(
            "trace: a CSV `bound` cell that is not a number",
            "bound-cell.csv",
            "run_id,seed,algorithm_id,task,step,episode,episode_step,reward,regime,regime_origin,terminated,truncated,ceiling,bound\n\
                 r,0,a,t,0,0,0,1.0,x,initial,false,false,,high\n",
            &["{file}:2", "column `bound`"],
        ),
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
            SWEEP.into(),
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
            .split(' ')
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
