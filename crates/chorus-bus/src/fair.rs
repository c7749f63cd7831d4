//! Weighted fair choice between priority levels: urgent first, low never starved.

use crate::envelope::{Priority, Rank};

/// Default weights by rank (LOW, MEDIUM, HIGH, CRITICAL): out of every 15 deliveries under
/// full load, CRITICAL gets 8, HIGH 4, MEDIUM 2 and LOW 1.
pub const DEFAULT_WEIGHTS: [u32; 4] = [1, 2, 4, 8];

/// Smooth weighted round robin over the four priority levels of one queue.
#[derive(Debug, Clone)]
pub struct FairScheduler {
    weights: [i64; 4],
    current: [i64; 4],
}

impl Default for FairScheduler {
    fn default() -> Self {
        FairScheduler::new(DEFAULT_WEIGHTS)
    }
}

impl FairScheduler {
    /// A scheduler with the given weights by rank (LOW first); a zero weight is treated as 1.
    pub fn new(weights: [u32; 4]) -> FairScheduler {
        FairScheduler {
            weights: weights.map(|w| i64::from(w.max(1))),
            current: [0; 4],
        }
    }

    /// Picks the level of the next delivery among the levels with messages waiting.
    ///
    /// With one message per level waiting the order is CRITICAL, HIGH, MEDIUM, LOW.
    pub fn pick(&mut self, available: [bool; 4]) -> Option<Priority> {
        let total: i64 = (0..4)
            .filter(|&r| available[r])
            .map(|r| self.weights[r])
            .sum();
        if total == 0 {
            return None;
        }
        let mut best: Option<usize> = None;
        // Descending ranks so that ties go to the more urgent level.
        for r in (0..4).rev().filter(|&r| available[r]) {
            self.current[r] += self.weights[r];
            if best.is_none_or(|b| self.current[r] > self.current[b]) {
                best = Some(r);
            }
        }
        let chosen = best?;
        self.current[chosen] -= total;
        Priority::from_rank(chosen as u8)
    }

    /// Plans a batch: how many messages to take from each level (by rank), given how many
    /// wait at each level, for at most `max` deliveries, in delivery order.
    pub fn plan(&mut self, mut waiting: [usize; 4], max: usize) -> Vec<Priority> {
        let mut order = Vec::with_capacity(max.min(waiting.iter().sum()));
        while order.len() < max {
            let Some(p) = self.pick(waiting.map(|n| n > 0)) else {
                break;
            };
            waiting[p.rank() as usize] -= 1;
            order.push(p);
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_per_level_comes_in_priority_order() {
        let mut s = FairScheduler::default();
        let order = s.plan([1, 1, 1, 1], 10);
        assert_eq!(
            order,
            [
                Priority::Critical,
                Priority::High,
                Priority::Medium,
                Priority::Low
            ]
        );
    }

    #[test]
    fn under_load_each_level_gets_its_share_and_low_is_not_starved() {
        let mut s = FairScheduler::default();
        let order = s.plan([1000; 4], 150);
        let count = |p| order.iter().filter(|&&x| x == p).count();
        assert_eq!(count(Priority::Critical), 80);
        assert_eq!(count(Priority::High), 40);
        assert_eq!(count(Priority::Medium), 20);
        assert_eq!(count(Priority::Low), 10);
        let first_low = order.iter().position(|&p| p == Priority::Low).unwrap();
        assert!(first_low < 15, "LOW waited {first_low} deliveries");
    }

    #[test]
    fn empty_levels_are_skipped() {
        let mut s = FairScheduler::default();
        assert_eq!(s.plan([3, 0, 0, 0], 5), vec![Priority::Low; 3]);
        assert_eq!(s.pick([false; 4]), None);
    }
}
