//! Notify levels per role: the world file's `[notify]` keys of a roles world, what each
//! role is told, and the run's record of them.

use perennial::world_file::TomlFile;
use std::collections::BTreeMap;
mod common;

use std::path::Path;

use common::{Scratch, path, run};

use perennial::morpheus::roles::{DeltaScope, OpKind, RoleNotify, tell};
use perennial::regime::{Change, Notification, NotifyLevel};
use perennial::world_file::WorldFile;

const SHIPPED: &str = include_str!("../worlds/enterprise.toml");

fn with_notify(table: &str) -> String {
    format!("{SHIPPED}\n[notify]\n{table}")
}

fn load(text: &str) -> Result<WorldFile, perennial::world_file::WorldFileError> {
    WorldFile::parse(text, Path::new("enterprise.toml"))
}

#[test]
fn per_role_levels_load_and_the_run_level_is_the_highest() {
    let w = load(&with_notify(
        "delta = \"relevant\"\nwarehouse = \"delta\"\nlogistics = \"none\"\n",
    ))
    .unwrap();
    assert_eq!(w.notify, NotifyLevel::Delta);
    let notify = w.roles.unwrap().notify;
    assert_eq!(notify.delta, DeltaScope::Relevant);
    let levels: Vec<(&str, NotifyLevel)> = notify
        .levels
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        levels,
        [
            ("logistics", NotifyLevel::None),
            ("warehouse", NotifyLevel::Delta)
        ]
    );
}

#[test]
fn a_role_not_named_is_told_at_the_files_level() {
    let w = load(&with_notify("level = \"flag\"\nwarehouse = \"label\"\n")).unwrap();
    assert_eq!(w.notify, NotifyLevel::Label);
    let notify = w.roles.unwrap().notify;
    assert_eq!(notify.levels["logistics"], NotifyLevel::Flag);
    assert_eq!(notify.levels["warehouse"], NotifyLevel::Label);
}

#[test]
fn a_level_for_an_unknown_role_names_the_file_line_and_field() {
    let text = with_notify("warehouse = \"delta\"\npurchasing = \"flag\"\n");
    let e = load(&text).unwrap_err();
    let line = text
        .lines()
        .position(|l| l.starts_with("purchasing"))
        .unwrap()
        + 1;
    assert_eq!(
        e.to_string(),
        format!(
            "enterprise.toml:{line}: field `notify.purchasing`: unknown role `purchasing`; `[notify]` takes `level`, `delta` and a level per role of this world: warehouse, logistics"
        )
    );
}

#[test]
fn a_bad_role_level_or_delta_scope_names_its_field() {
    let e = load(&with_notify("logistics = \"loud\"\n")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("notify.logistics"), "{e}");
    assert!(e.message.contains("unknown notify level `loud`"), "{e}");
    let e = load(&with_notify("delta = \"some\"\n")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("notify.delta"), "{e}");
    assert!(e.message.contains("unknown delta scope `some`"), "{e}");
}

#[test]
fn a_world_without_roles_still_refuses_any_key_but_level() {
    let text = "[world]\nkind = \"cartpole\"\n\n[[regimes]]\nlabel = \"a\"\n\n[notify]\nlevel = \"flag\"\nwarehouse = \"delta\"\n";
    let e = WorldFile::parse(text, Path::new("w.toml")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "w.toml:9: field `notify.warehouse`: unknown field `warehouse`, expected `level`"
    );
}

fn shift(level: NotifyLevel) -> Notification {
    let change = |from, to| Change { from, to };
    let delta: BTreeMap<String, Change> = [
        ("lead_time".to_string(), change(1.0, 3.0)),
        ("late_penalty".to_string(), change(1.0, 6.0)),
        ("cost_multiplier".to_string(), change(1.0, 1.5)),
    ]
    .into();
    Notification {
        step: 2000,
        level,
        label: (level == NotifyLevel::Label).then(|| "supplier_crisis".to_string()),
        delta: (level == NotifyLevel::Delta).then_some(delta),
    }
}

const WAREHOUSE: [OpKind; 3] = [OpKind::Reorder, OpKind::Expedite, OpKind::RepairDock];
const LOGISTICS: [OpKind; 3] = [
    OpKind::ChooseCarrier,
    OpKind::PrioritizeSku,
    OpKind::HoldWave,
];

fn names(n: &Notification) -> Vec<&str> {
    n.delta
        .as_ref()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn a_relevant_delta_tells_each_role_only_the_parameters_of_its_operations() {
    let n = shift(NotifyLevel::Delta);
    let relevant = DeltaScope::Relevant;
    let w = tell(NotifyLevel::Delta, relevant, &WAREHOUSE, &n, || None).unwrap();
    let l = tell(NotifyLevel::Delta, relevant, &LOGISTICS, &n, || None).unwrap();
    // A cost multiplier bears on every operation; lead times on the inbound desk only.
    assert_eq!(names(&w), ["cost_multiplier", "lead_time"]);
    assert_eq!(names(&l), ["cost_multiplier", "late_penalty"]);
    assert_eq!((w.step, w.level, w.label), (2000, NotifyLevel::Delta, None));
    let all = tell(NotifyLevel::Delta, DeltaScope::All, &WAREHOUSE, &n, || None).unwrap();
    assert_eq!(
        names(&all),
        ["cost_multiplier", "late_penalty", "lead_time"]
    );
}

#[test]
fn each_role_is_told_at_its_own_level() {
    let n = shift(NotifyLevel::Label);
    let all = DeltaScope::All;
    assert_eq!(tell(NotifyLevel::None, all, &WAREHOUSE, &n, || None), None);
    let flag = tell(NotifyLevel::Flag, all, &WAREHOUSE, &n, || None).unwrap();
    assert_eq!(
        (flag.level, flag.label, flag.delta),
        (NotifyLevel::Flag, None, None)
    );
    let label = tell(NotifyLevel::Label, all, &WAREHOUSE, &n, || None).unwrap();
    assert_eq!(label.label.as_deref(), Some("supplier_crisis"));
    assert_eq!(label.delta, None);
    // A delta role in a run told labels: the delta worked out from the labels.
    let worked_out = || {
        Some(BTreeMap::from([(
            "lead_time".to_string(),
            Change { from: 1.0, to: 3.0 },
        )]))
    };
    let delta = tell(NotifyLevel::Delta, all, &WAREHOUSE, &n, worked_out).unwrap();
    assert_eq!(
        (delta.level, delta.label.as_deref()),
        (NotifyLevel::Delta, None)
    );
    assert_eq!(names(&delta), ["lead_time"]);
}

#[test]
fn a_run_with_per_role_levels_records_them_in_its_manifest_and_notify_column() {
    let dir = Scratch::new("roles-notify");
    let world = dir.write(
        "enterprise.toml",
        &with_notify("warehouse = \"delta\"\nlogistics = \"none\"\n"),
    );
    let trace = dir.join("t.jsonl");
    run(&[
        "run",
        path(&world),
        "--steps",
        "2100",
        "--trace",
        path(&trace),
    ]);
    let manifest = perennial::trace::Manifest::beside(&trace).unwrap();
    assert_eq!(
        manifest.options["role_notify"],
        serde_json::json!({"logistics": "none", "warehouse": "delta"})
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["notify"], "delta");
}

#[test]
fn the_run_level_of_perennial_run_notify_caps_every_role_s_level() {
    let w = load(&with_notify(
        "warehouse = \"delta\"\nlogistics = \"none\"\n",
    ))
    .unwrap();
    let notify: RoleNotify = w.roles.unwrap().notify;
    let levels = |run| {
        (
            notify.level_of("warehouse", run),
            notify.level_of("logistics", run),
        )
    };
    use NotifyLevel::{Delta, Flag, Label, None};
    // The world file's own run level (the highest): each role at its own.
    assert_eq!(levels(w.notify), (Delta, None));
    // `--notify label` is above every role: each role still at its own.
    assert_eq!(levels(Label), (Delta, None));
    // `--notify flag`: the warehouse learns only that a shift happened, not its delta.
    assert_eq!(levels(Flag), (Flag, None));
    assert_eq!(levels(None), (None, None));
    let n = shift(Flag);
    let told = tell(levels(Flag).0, DeltaScope::All, &WAREHOUSE, &n, || {
        panic!("no delta is worked out for a role capped at flag")
    });
    assert_eq!(told.map(|t| (t.level, t.delta)), Some((Flag, Option::None)));
}
