//! Seeded random streams: one run seed, separate streams for the world, the scheduler and the agent.
//!
//! Every stream is a ChaCha8 generator keyed by the run seed and told apart by the ChaCha
//! stream number, so two algorithms run on one seed meet the same exogenous events (demand,
//! failures, regime shifts) however differently they consume their own randomness.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Which consumer a random stream serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// The world: its `reset` seed, hence demand, failures and every exogenous event.
    World = 1,
    /// The regime scheduler's stochastic plan.
    Scheduler = 2,
    /// The agent's exploration.
    Agent = 3,
}

/// A generator for `stream` of the run seeded with `seed`.
///
/// # Examples
///
/// ```
/// use perennial::seed::{rng, Stream};
/// use rand::Rng;
///
/// let mut world = rng(42, Stream::World);
/// let mut agent = rng(42, Stream::Agent);
/// assert_ne!(world.next_u64(), agent.next_u64());
/// assert_eq!(rng(42, Stream::World).next_u64(), rng(42, Stream::World).next_u64());
/// ```
pub fn rng(seed: u64, stream: Stream) -> ChaCha8Rng {
    stream_rng(seed, stream as u64)
}

/// A generator keyed by `seed` on ChaCha stream number `stream`: the run streams above
/// use 1 to 3; the vector's copies use numbers of their own.
pub(crate) fn stream_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// The `n`-th `u64` of `rng`'s stream, read without drawing the ones before it.
pub(crate) fn nth_u64(mut rng: ChaCha8Rng, n: u64) -> u64 {
    rng.set_word_pos(u128::from(n) * 2);
    rand::Rng::next_u64(&mut rng)
}

/// A `u64` seed for `stream`, for APIs that take a seed rather than a generator
/// (`Env::reset`, `Scheduler::new`). The `episode` index gives each auto-reset episode of a
/// run its own world seed.
pub fn derive(seed: u64, stream: Stream, episode: u64) -> u64 {
    nth_u64(rng(seed, stream), episode)
}

/// The seeds [`derive`] gives one stream of one run, episode after episode, drawn from a
/// single generator kept between calls: `get(k)` is `derive(seed, stream, k)`, but the
/// harness, which asks for the next episode's seed at every auto-reset, neither keys a
/// generator nor computes a block per episode (the generator's buffer holds 32 seeds).
#[derive(Clone, Debug)]
pub(crate) struct Derived {
    rng: ChaCha8Rng,
    /// The episode whose seed the generator's position gives without a seek.
    next: u64,
}

impl Derived {
    /// The seeds of `stream` of the run seeded with `seed`.
    pub(crate) fn new(seed: u64, stream: Stream) -> Self {
        Derived {
            rng: rng(seed, stream),
            next: 0,
        }
    }

    /// `derive(seed, stream, episode)`; the next episode's is the generator's next word.
    pub(crate) fn get(&mut self, episode: u64) -> u64 {
        if episode != self.next {
            self.rng.set_word_pos(u128::from(episode) * 2);
        }
        self.next = episode.wrapping_add(1);
        rand::Rng::next_u64(&mut self.rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_seeds_are_derive_in_order_and_after_a_jump() {
        for seed in [0, 7, u64::MAX] {
            let mut seeds = Derived::new(seed, Stream::World);
            let order = (0..70).chain([5, 6, 1000, 1001, 3, 0, 0, 64, 63]);
            for episode in order {
                assert_eq!(
                    seeds.get(episode),
                    derive(seed, Stream::World, episode),
                    "seed {seed}, episode {episode}"
                );
            }
        }
    }
}
