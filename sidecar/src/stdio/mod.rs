pub mod dispatch;
pub mod handlers;
pub mod transport;
