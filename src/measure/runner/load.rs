//! `--load CPULIST`: a CPU hog on each listed CPU during a measurement (like `stress --cpu`),
//! to see how the measured CPUs fare while their neighbours are busy.

use crate::machine::CpuSet;
use crate::measure::runner::harness::Helper;
use crate::measure::runner::harness::{self, StopFlag};
use crate::text::voice;

/// One hog per CPU of `cpus`, each pinned and spinning at normal priority until the stop.
pub(crate) fn hogs(cpus: &CpuSet) -> Vec<Helper<'static>> {
    cpus.iter()
        .map(|cpu| -> Helper<'static> { Box::new(move |stop: &StopFlag| hog(cpu, stop)) })
        .collect()
}

fn hog(cpu: u32, stop: &StopFlag) {
    if let Err(e) = harness::pin_current_thread(cpu) {
        voice::warning!("cannot pin a load hog to CPU {cpu}: {e}; that hog is not run");
        return;
    }
    let mut x = 0u64;
    while !stop.is_stopped() {
        // Integer work the optimiser cannot remove.
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hogs_stop_when_asked() {
        let stop = StopFlag::new();
        let helpers = hogs(&CpuSet::parse_list("0").unwrap());
        assert_eq!(helpers.len(), 1);
        std::thread::scope(|s| {
            for helper in helpers {
                let stop = stop.clone();
                s.spawn(move || helper(&stop));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            stop.stop();
        });
    }
}
