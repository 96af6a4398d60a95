use super::*;
use crate::env::Env;
use crate::morpheus::default_reward_spec;

fn team_terms() -> Vec<String> {
    default_reward_spec()
        .terms
        .into_iter()
        .map(|t| t.name)
        .collect()
}

#[test]
fn the_shipped_split_owns_every_operation_and_term_once() {
    assert_eq!(RoleTable::default().check(Some(&team_terms())), Ok(()));
}

#[test]
fn a_role_without_operations_an_operation_owned_twice_or_by_none_is_refused() {
    let mut t = RoleTable::default();
    t.roles[1].ops.clear();
    let e = t.check(None).unwrap_err();
    assert_eq!((e.role.as_deref(), e.field), (Some("logistics"), "ops"));
    let mut t = RoleTable::default();
    t.roles[1].ops.push(OpKind::Reorder);
    let e = t.check(None).unwrap_err();
    assert!(e.message.contains("`reorder` is owned twice"), "{e}");
    let mut t = RoleTable::default();
    t.roles[1].ops.retain(|k| *k != OpKind::HoldWave);
    assert!(
        t.check(None)
            .unwrap_err()
            .message
            .contains("`hold_wave` is owned by no role")
    );
    let mut t = RoleTable::default();
    t.roles[0].terms.push("revenue".into());
    let e = t.check(Some(&team_terms())).unwrap_err();
    assert!(e.message.contains("owned twice"), "{e}");
}

#[test]
fn role_tables_decode_and_encode_each_others_inverse() {
    let cfg = MorpheusConfig::default();
    for role in &RoleTable::default().roles {
        let l = RoleLayout::new(role, &cfg);
        for i in 0..l.actions {
            let op = l.decode(i).unwrap();
            assert_eq!(l.encode(op), Some(i), "{op:?}");
        }
        assert_eq!(l.decode(l.actions), None);
    }
    let w = RoleLayout::new(&RoleTable::default().roles[0], &cfg);
    assert_eq!(w.actions, 1 + 8 * 4 + 8 + 4);
    assert_eq!(
        w.encode(Op::HoldWave),
        None,
        "the warehouse cannot hold a wave"
    );
    let l = RoleLayout::new(&RoleTable::default().roles[1], &cfg);
    assert_eq!(l.actions, 1 + 3 + 8 + 1);
}

fn actions(e: &EnterpriseEnv) -> usize {
    match e.spec().action_space {
        crate::env::Space::Discrete { n } => n,
        _ => unreachable!("a joint action is Discrete"),
    }
}

fn env(roles: RoleTable) -> EnterpriseEnv {
    EnterpriseEnv::new(MorpheusConfig::default(), default_reward_spec(), roles).unwrap()
}

/// The roles' own rewards add up to the team reward at every step, under any actions.
#[test]
fn role_rewards_partition_the_team_reward_every_step() {
    use rand::{RngExt, SeedableRng};
    let mut e = env(RoleTable::default());
    e.reset(11);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let n = actions(&e);
    for step in 0..5000 {
        let t = e.step(&rng.random_range(0..n)).unwrap();
        let sum: f64 = e.role_rewards().iter().sum();
        let scale = t
            .breakdown
            .as_ref()
            .unwrap()
            .components
            .iter()
            .map(|c| c.abs())
            .sum::<f64>();
        assert!(
            (sum - t.reward).abs() <= 1e-12 * scale.max(1.0),
            "step {step}: roles {sum} vs team {}",
            t.reward
        );
    }
}

#[test]
fn a_joint_action_applies_each_roles_operation_in_the_same_hour() {
    let mut e = env(RoleTable::default());
    e.reset(2);
    let reorder = e.layouts()[0]
        .encode(Op::Reorder { sku: 0, bucket: 3 })
        .unwrap();
    let carrier = e.layouts()[1]
        .encode(Op::ChooseCarrier { carrier: 0 })
        .unwrap();
    let a = e.joint(&[reorder, carrier]).unwrap();
    assert_eq!(e.split(a), vec![reorder, carrier]);
    e.step(&a).unwrap();
    let snap = e.world().snapshot().unwrap();
    assert_eq!(snap.dispatch.carrier, 0);
    assert_eq!(snap.purchase_orders.len(), 1);
    assert_eq!(e.joint(&[reorder]), None);
    assert_eq!(e.joint(&[e.layouts()[0].actions, 0]), None);
}

#[test]
fn own_views_are_projections_and_full_views_are_the_state() {
    let mut full = RoleTable::default();
    full.roles[1].observe = Observe::Full;
    let mut e = env(full);
    let first = e.reset(5);
    assert_eq!(e.state(), first);
    let own = e.observe(0, &first);
    assert!(own.len() < first.len());
    assert_eq!(e.observe(1, &first), first);
    let back = e.layouts()[0].embed(&own);
    for &i in &e.layouts()[0].seen {
        assert_eq!(back[i], first[i]);
    }
}

#[test]
fn an_observe_override_replaces_what_each_role_sees() {
    let mut full = RoleTable::default();
    full.roles[1].observe = Observe::Full;
    let e = env(full);
    let every: Vec<usize> = (0..MorpheusConfig::default().observation_len()).collect();
    assert_eq!(e.seen(1, None), Some(every.clone()));
    assert_eq!(e.seen(0, Some(Observe::Full)), Some(every));
    let own = env(RoleTable::default());
    assert_eq!(
        e.seen(1, Some(Observe::Own)),
        Some(own.layouts()[1].seen.clone())
    );
    assert_eq!(e.seen(2, None), None);
}

#[test]
fn learning_rewards_mix_the_team_reward_and_each_roles_own_by_alpha() {
    let half = RoleTable {
        alpha: 0.5,
        ..RoleTable::default()
    };
    let mut cooperative = env(RoleTable::default());
    let mut mixed = env(half);
    cooperative.reset(8);
    mixed.reset(8);
    for a in [0, 7, 100, 7] {
        let t = cooperative.step(&a).unwrap();
        assert_eq!(cooperative.learning_rewards(t.reward), vec![t.reward; 2]);
        let t = mixed.step(&a).unwrap();
        let own = mixed.role_rewards().to_vec();
        let learn = mixed.learning_rewards(t.reward);
        for (l, o) in learn.iter().zip(&own) {
            assert_eq!(l.to_bits(), (0.5 * t.reward + 0.5 * o).to_bits());
        }
        assert_eq!(mixed.reward_tap().take(1), vec![learn]);
    }
}

/// Same seed, same joint actions: the same observations and rewards, bit for bit.
#[test]
fn a_roles_world_is_deterministic() {
    let run = || {
        let mut e = env(RoleTable::default());
        let mut out = vec![];
        e.reset(9);
        for i in 0..1000usize {
            let t = e.step(&((i * 7919) % actions(&e))).unwrap();
            out.push((
                t.reward.to_bits(),
                t.observation
                    .iter()
                    .map(|x| x.to_bits())
                    .collect::<Vec<_>>(),
            ));
        }
        out
    };
    assert_eq!(run(), run());
}

#[test]
fn held_waves_ship_nothing_then_ship_cheaper() {
    let mut e = env(RoleTable::default());
    e.reset(1);
    let hold = e.layouts()[1].encode(Op::HoldWave).unwrap();
    let at = |name: &str| {
        crate::morpheus::signal_names()
            .iter()
            .position(|s| *s == name)
            .unwrap()
    };
    for _ in 0..30 {
        e.step(&0).unwrap();
    }
    e.step(&e.joint(&[0, hold]).unwrap()).unwrap();
    assert_eq!(e.world().signals()[at("orders_shipped")], 0.0);
    assert!(e.world().snapshot().unwrap().dispatch.consolidated);
    e.step(&0).unwrap();
    assert!(!e.world().snapshot().unwrap().dispatch.consolidated);
}

/// A world with roles can hold waves and ship the next at a discount, so its bound prices
/// every unit's shipping at that discount: above the single-agent world's bound, and the
/// same number after a snapshot is loaded.
#[test]
fn the_bound_of_a_roles_world_prices_consolidated_shipping() {
    use crate::morpheus::{expected_bound, expected_bound_consolidating};
    let mut e = env(RoleTable::default());
    e.reset(3);
    let (cfg, k) = (e.world().config().clone(), e.world().conditions().clone());
    let bound = e.expected_bound().unwrap();
    assert_eq!(
        bound.to_bits(),
        expected_bound_consolidating(&cfg, &k).to_bits()
    );
    assert!(bound > expected_bound(&cfg, &k));
    assert_eq!(
        e.world().expected_bound().unwrap().to_bits(),
        bound.to_bits()
    );
    let saved = e.save_state().unwrap();
    e.step(&0).unwrap();
    e.load_state(saved).unwrap();
    assert_eq!(e.expected_bound().unwrap().to_bits(), bound.to_bits());
    let typed = e.save_state_typed().unwrap();
    e.step(&0).unwrap();
    e.load_state_typed(&typed).unwrap();
    assert_eq!(e.expected_bound().unwrap().to_bits(), bound.to_bits());
}

#[test]
fn agent_specs_name_each_role_once() {
    let t = RoleTable::default();
    let pairs = parse_agent_spec("logistics=random,warehouse=base-stock", &t).unwrap();
    assert_eq!(
        pairs[0],
        ("warehouse".to_string(), "base-stock".to_string())
    );
    assert!(
        parse_agent_spec("warehouse=random", &t)
            .unwrap_err()
            .contains("role `logistics` no agent")
    );
    assert!(
        parse_agent_spec("warehouse=random,sales=random", &t)
            .unwrap_err()
            .contains("unknown role `sales`")
    );
    assert_eq!(
        agent_id("warehouse=base-stock,logistics=random"),
        "warehouse.base-stock+logistics.random"
    );
}
