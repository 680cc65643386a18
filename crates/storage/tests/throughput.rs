//! A measurement, not a check: one million writes, then watches of them. Run it in release:
//! `cargo test --release -p kubeplane-storage --test throughput -- --ignored --nocapture`.

use std::thread;
use std::time::{Duration, Instant};

use kubeplane_storage::{Key, ListOptions, MemoryStorage, Prefix, Storage, Watcher};

const WRITES: u64 = 1_000_000;
const KEYS: u64 = 10_000;

fn keys() -> Vec<Key> {
    (0..KEYS)
        .map(|i| Key::new("pods", &format!("ns-{}", i % 10), &format!("pod-{i}")))
        .collect()
}

/// Creates every key, then updates them round-robin, up to `WRITES` writes in all.
fn write(s: &MemoryStorage<u64>, keys: &[Key]) -> Duration {
    let start = Instant::now();
    for i in 0..WRITES {
        let key = &keys[(i % KEYS) as usize];
        if i < KEYS {
            s.create(key, i).unwrap();
        } else {
            s.update(key, i, None).unwrap();
        }
    }
    start.elapsed()
}

fn rate(n: u64, d: Duration) -> String {
    format!(
        "{:.2} M/s ({:.0} ns each)",
        n as f64 / d.as_secs_f64() / 1e6,
        d.as_nanos() as f64 / n as f64
    )
}

#[test]
#[ignore = "a measurement; run in release with --ignored --nocapture"]
fn one_million_writes_and_watches_of_them() {
    let keys = keys();

    let all = MemoryStorage::new(WRITES as usize);
    let d = write(&all, &keys);
    println!("writes, whole history kept:        {}", rate(WRITES, d));

    let mut w = all.cursor(&Prefix::All, Some(0)).unwrap();
    let mut batch = Vec::with_capacity(1024);
    let start = Instant::now();
    let mut seen = 0;
    while w.try_next_batch(&mut batch, 1024).unwrap() > 0 {
        seen += batch.len() as u64;
        batch.clear();
    }
    assert_eq!(seen, WRITES);
    println!(
        "watch, batches of 1024:            {}",
        rate(WRITES, start.elapsed())
    );

    let mut w = all.cursor(&Prefix::All, Some(0)).unwrap();
    let start = Instant::now();
    while w.try_next().unwrap().is_some() {}
    println!(
        "watch, one event per call:         {}",
        rate(WRITES, start.elapsed())
    );

    let mut w = all
        .cursor(&Prefix::namespace("pods", "ns-3"), Some(0))
        .unwrap();
    let start = Instant::now();
    let mut seen = 0;
    while w.try_next_batch(&mut batch, 1024).unwrap() > 0 {
        seen += batch.len() as u64;
        batch.clear();
    }
    assert_eq!(seen, WRITES / 10);
    println!(
        "watch of one namespace in ten:     {} (log entries walked)",
        rate(WRITES, start.elapsed())
    );

    let page = ListOptions::default();
    let start = Instant::now();
    let listed = all.list(&Prefix::resource("pods"), &page).unwrap();
    println!(
        "list of {} keys, current:       {:?}",
        listed.items.len(),
        start.elapsed()
    );
    let past = ListOptions {
        at: Some(WRITES / 2),
        ..ListOptions::default()
    };
    let start = Instant::now();
    let listed = all.list(&Prefix::resource("pods"), &past).unwrap();
    println!(
        "list of {} keys, 500k back:     {:?}",
        listed.items.len(),
        start.elapsed()
    );
    drop(all);

    let windowed = MemoryStorage::new(10_000);
    let d = write(&windowed, &keys);
    println!("writes, window of 10,000:          {}", rate(WRITES, d));
    let start = Instant::now();
    windowed.compact(windowed.current_revision()).unwrap();
    println!("compaction of the 10,000 window:   {:?}", start.elapsed());

    // One writer and four followers on other threads, waiting for events as a server would.
    let live = MemoryStorage::new(100_000);
    let followers: Vec<_> = (0..4)
        .map(|_| {
            let mut w = live.cursor(&Prefix::All, Some(0)).unwrap();
            thread::spawn(move || {
                let mut batch = Vec::with_capacity(1024);
                while w.position() < WRITES {
                    if w.try_next_batch(&mut batch, 1024).unwrap() == 0 {
                        w.wait_next(Duration::from_secs(10)).unwrap();
                    }
                    batch.clear();
                }
            })
        })
        .collect();
    let start = Instant::now();
    write(&live, &keys);
    let writes = start.elapsed();
    for f in followers {
        f.join().unwrap();
    }
    println!(
        "writes with 4 live followers:      {}; all followed in {:?}",
        rate(WRITES, writes),
        start.elapsed()
    );
}

/// The durable storage's encoding of the measured values.
struct Bytes;

impl kubeplane_storage::Codec<Vec<u8>> for Bytes {
    fn encode(&self, value: &Vec<u8>, out: &mut Vec<u8>) {
        out.extend_from_slice(value);
    }

    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        Ok(bytes.to_vec())
    }
}

/// Durable writes per second with 1, 16 and 64 writer threads, each creating its own keys with
/// 1 KiB values for two seconds, on the temporary directory's disk (or in
/// `KUBEPLANE_BENCH_DIR`): what group commit buys.
/// `cargo test --release -p kubeplane-storage --test throughput -- --ignored --nocapture durable`
#[test]
#[ignore]
fn durable_writes_per_second_by_writer_threads() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    for threads in [1, 16, 64] {
        let base = std::env::var_os("KUBEPLANE_BENCH_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!("kubeplane-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let storage =
            Arc::new(kubeplane_storage::DurableStorage::open(&dir, 100_000, Bytes).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let start = Instant::now();
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                let (storage, stop, count) = (storage.clone(), stop.clone(), count.clone());
                thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let key = Key::new("pods", &format!("ns-{t}"), &format!("pod-{i}"));
                        storage.create(&key, vec![b'x'; 1024]).unwrap();
                        count.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                })
            })
            .collect();
        thread::sleep(Duration::from_secs(2));
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        let elapsed = start.elapsed();
        let n = count.load(Ordering::Relaxed);
        println!(
            "durable, {threads:>2} writer threads: {n} writes in {:.2} s, {:.0} writes/s",
            elapsed.as_secs_f64(),
            n as f64 / elapsed.as_secs_f64()
        );
        drop(storage);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
