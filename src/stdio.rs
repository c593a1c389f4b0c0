//! The three standard streams, named once: which one a copy writes to, a warning speaks of, or a
//! failure concerns. A leaf, like `text`.

use std::fmt;
use std::os::fd::RawFd;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdin,
    Stdout,
    Stderr,
}

impl Stream {
    /// A bit of its own, for sets of streams.
    pub fn bit(self) -> u8 {
        match self {
            Stream::Stdin => 1,
            Stream::Stdout => 2,
            Stream::Stderr => 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdin => "stdin",
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }

    pub fn fd(self) -> RawFd {
        match self {
            Stream::Stdin => libc::STDIN_FILENO,
            Stream::Stdout => libc::STDOUT_FILENO,
            Stream::Stderr => libc::STDERR_FILENO,
        }
    }
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_descriptors() {
        let all = [Stream::Stdin, Stream::Stdout, Stream::Stderr];
        let named: Vec<(String, RawFd)> = all.iter().map(|s| (s.to_string(), s.fd())).collect();
        assert_eq!(
            named,
            [
                ("stdin".to_string(), 0),
                ("stdout".to_string(), 1),
                ("stderr".to_string(), 2)
            ]
        );
    }
}
