//! Shared by the benches: a criterion measurement of the benchmark thread's CPU time.
//!
//! The benchmark machine is shared, so wall time includes the time other processes held the
//! core. `BENCH_CLOCK=cpu` measures the time the benchmark thread itself ran instead, read from
//! `/proc/thread-self/schedstat` (Linux, nanoseconds). It still feels cache pressure from the
//! neighbours, but not their time slices.

use criterion::Throughput;
use criterion::measurement::{Measurement, ValueFormatter};

/// Whether `BENCH_CLOCK=cpu` asks for CPU time instead of wall time.
pub fn cpu_clock_requested() -> bool {
    std::env::var("BENCH_CLOCK").is_ok_and(|v| v == "cpu")
}

/// Nanoseconds this thread has run on a CPU.
fn thread_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("BENCH_CLOCK=cpu needs Linux /proc/thread-self/schedstat");
    stat.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("schedstat starts with the on-CPU time in ns")
}

/// The benchmark thread's CPU time, in nanoseconds.
pub struct ThreadCpuTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, ns: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if ns < 1e3 {
            (1.0, "ns cpu")
        } else if ns < 1e6 {
            (1e-3, "µs cpu")
        } else if ns < 1e9 {
            (1e-6, "ms cpu")
        } else {
            (1e-9, "s cpu")
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(
        &self,
        typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let (amount, units): (f64, [&'static str; 4]) = match *throughput {
            Throughput::Bytes(b) | Throughput::BytesDecimal(b) => {
                (b as f64, ["B/s cpu", "KB/s cpu", "MB/s cpu", "GB/s cpu"])
            }
            Throughput::Bits(b) => (b as f64, ["b/s cpu", "Kb/s cpu", "Mb/s cpu", "Gb/s cpu"]),
            Throughput::Elements(e) | Throughput::ElementsAndBytes { elements: e, .. } => (
                e as f64,
                ["elem/s cpu", "Kelem/s cpu", "Melem/s cpu", "Gelem/s cpu"],
            ),
        };
        let per_second = amount * 1e9 / typical;
        let (denominator, unit) = if per_second < 1e3 {
            (1.0, units[0])
        } else if per_second < 1e6 {
            (1e3, units[1])
        } else if per_second < 1e9 {
            (1e6, units[2])
        } else {
            (1e9, units[3])
        };
        values
            .iter_mut()
            .for_each(|v| *v = amount * 1e9 / *v / denominator);
        unit
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

/// A `/proc/self/status` field in KiB (e.g. `VmRSS`, `VmHWM`).
pub fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux /proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// Resets the process's peak RSS (`VmHWM`) to its current RSS (Linux 4.0+).
pub fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").expect("write /proc/self/clear_refs");
}
