pub mod cursor_print;
pub mod process;
