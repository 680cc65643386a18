//! Writing records: one JSON object per line (jsonl), one JSON document (json), or a table
//! for a person, the last two closing with the run's summary.

pub mod age;
mod table;

use std::io::Write;

use kubeplane_sim::Record;
use serde_json::Value;

use crate::cli::OutputFormat;
use crate::summary::Summary;

/// A string field of a JSON record ("" when absent or not a string).
pub(crate) fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

pub struct Writer<W: Write> {
    out: W,
    format: OutputFormat,
    header_written: bool,
    /// `--output json`: the records so far, written with the summary at the end.
    collected: Vec<Value>,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W, format: OutputFormat) -> Self {
        Writer {
            out,
            format,
            header_written: false,
            collected: Vec::new(),
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
                OutputFormat::Json => self.collected.push(v),
                OutputFormat::Table => self.write_row(&v)?,
            }
        }
        Ok(())
    }

    fn write_header(&mut self) -> std::io::Result<()> {
        if !self.header_written {
            writeln!(
                self.out,
                "{:>10}  {:<40}  {:<24}  MESSAGE",
                "TIME", "OBJECT", "REASON"
            )?;
            self.header_written = true;
        }
        Ok(())
    }

    fn write_row(&mut self, v: &Value) -> std::io::Result<()> {
        self.write_header()?;
        let r = table::row(v);
        writeln!(
            self.out,
            "{:>10}  {:<40}  {:<24}  {}",
            r.time, r.object, r.reason, r.message
        )
    }

    /// Ends the output: the table's closing summary, or the json document with its summary
    /// last. jsonl has no summary (its records are the contract).
    pub fn finish(&mut self, summary: &Summary) -> std::io::Result<()> {
        match self.format {
            OutputFormat::Jsonl => {}
            OutputFormat::Json => {
                let doc = serde_json::json!({
                    "records": std::mem::take(&mut self.collected),
                    "summary": summary.to_json(),
                });
                serde_json::to_writer_pretty(&mut self.out, &doc)?;
                self.out.write_all(b"\n")?;
            }
            OutputFormat::Table => {
                self.write_header()?;
                writeln!(self.out)?;
                for line in summary.to_lines() {
                    writeln!(self.out, "{line}")?;
                }
            }
        }
        self.out.flush()
    }
}
