//! The part of base64 0.22's `Engine` API that phi-core calls, over Debian's base64 0.13.
//!
//! 0.13 has the same encoder behind free functions and a `Config`; 0.22 put it behind an
//! `Engine` trait. Only the standard alphabet with padding is used by phi-core (reading image
//! files into `Content::Image`, and one test decoding that back), so that is all this offers.

pub use base64_013::DecodeError;

/// Encoding and decoding with one fixed alphabet and padding (0.22's trait, reduced).
pub trait Engine {
    /// The 0.13 configuration this engine stands for.
    fn config(&self) -> base64_013::Config;

    /// Encode bytes into a new `String`.
    fn encode<T: AsRef<[u8]>>(&self, input: T) -> String {
        base64_013::encode_config(input, self.config())
    }

    /// Decode into a new `Vec<u8>`.
    fn decode<T: AsRef<[u8]>>(&self, input: T) -> Result<Vec<u8>, DecodeError> {
        base64_013::decode_config(input, self.config())
    }
}

pub mod engine {
    //! `engine::general_purpose::STANDARD`, where 0.22 keeps it.

    pub mod general_purpose {
        /// An engine with a 0.13 configuration.
        #[derive(Debug, Clone, Copy)]
        pub struct GeneralPurpose(base64_013::Config);

        impl crate::Engine for GeneralPurpose {
            fn config(&self) -> base64_013::Config {
                self.0
            }
        }

        /// The standard alphabet (RFC 4648 section 4) with `=` padding.
        pub const STANDARD: GeneralPurpose = GeneralPurpose(base64_013::STANDARD);
    }
}

#[cfg(test)]
mod tests {
    use super::engine::general_purpose::STANDARD;
    use super::Engine;

    #[test]
    fn round_trip_with_padding() {
        assert_eq!(STANDARD.encode(b"phi"), "cGhp");
        assert_eq!(STANDARD.encode(b"ph"), "cGg=");
        assert_eq!(STANDARD.decode("cGg=").unwrap(), b"ph");
        assert!(STANDARD.decode("c*g=").is_err());
    }
}
