pub mod catalog;
pub mod prompt;
pub mod sessions;
pub mod state;
pub mod turn;
