//! Writing records: one JSON object per line, or a table for a person.

use std::io::Write;

use kubeplane_sim::Record;
use serde_json::Value;

use crate::cli::OutputFormat;

pub struct Writer<W: Write> {
    out: W,
    format: OutputFormat,
    header_written: bool,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W, format: OutputFormat) -> Self {
        Writer {
            out,
            format,
            header_written: false,
        }
    }

    pub fn write(&mut self, records: &[Record]) -> std::io::Result<()> {
        for r in records {
            let v = r.to_json();
            match self.format {
                OutputFormat::Jsonl => {
                    serde_json::to_writer(&mut self.out, &v)?;
                    self.out.write_all(b"\n")?;
                }
                OutputFormat::Table => self.write_row(&v)?,
            }
        }
        Ok(())
    }

    fn write_row(&mut self, v: &Value) -> std::io::Result<()> {
        if !self.header_written {
            writeln!(
                self.out,
                "{:>10}  {:<40}  {:<24}  MESSAGE",
                "TIME", "OBJECT", "REASON"
            )?;
            self.header_written = true;
        }
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
        let time = v.get("time").and_then(Value::as_f64).unwrap_or(0.0);
        let kind = s("kind");
        let (object, reason, message) = match kind {
            "Expectation" => (
                "expect".to_string(),
                s("reason").to_string(),
                s("message").to_string(),
            ),
            "SchedulingAttempt" => {
                let node = v.get("node").and_then(Value::as_str).unwrap_or("-");
                (
                    format!("Pod {}/{}", s("namespace"), s("name")),
                    format!("Attempt{}", s("result")),
                    format!(
                        "attempt {} on profile {}: node {}",
                        v["attempt"],
                        s("profile"),
                        node
                    ),
                )
            }
            "EvictionDecision" | "ScaleDownDecision" | "StepFailed" => {
                let obj = if s("name").is_empty() {
                    kind.to_string()
                } else {
                    format!("{}/{}", s("namespace"), s("name"))
                };
                let msg = if s("message").is_empty() {
                    v.to_string()
                } else {
                    s("message").to_string()
                };
                (obj, kind.to_string(), msg)
            }
            _ => {
                let obj = if s("namespace").is_empty() {
                    format!("{} {}", kind, s("name"))
                } else {
                    format!("{} {}/{}", kind, s("namespace"), s("name"))
                };
                (obj, s("reason").to_string(), s("message").to_string())
            }
        };
        writeln!(
            self.out,
            "{:>9}s  {:<40}  {:<24}  {}",
            format_time(time),
            object,
            reason,
            message
        )
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn format_time(t: f64) -> String {
    if t.fract() == 0.0 {
        format!("{t:.0}")
    } else {
        format!("{t:.3}")
    }
}
