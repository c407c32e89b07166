//! The mock API on its own runtime thread, so serving responses does not compete with the
//! engine for the workers of the runtime being measured (as with a real, remote API).

use std::sync::Arc;

use tokio::runtime::Runtime;

use super::BenchError;
use crate::mock::{MockServer, Scenario};

pub struct MockHost {
    runtime: Option<Runtime>,
}

impl MockHost {
    pub fn new() -> Result<MockHost, BenchError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ouro-bench-mock")
            .enable_all()
            .build()
            .map_err(|e| BenchError::io("could not start the mock API's runtime", e))?;
        Ok(MockHost {
            runtime: Some(runtime),
        })
    }

    /// Serves `scenario` on a free loopback port.
    pub async fn serve(&self, scenario: Scenario) -> Result<Arc<MockServer>, BenchError> {
        let started = self.runtime().spawn(MockServer::start(scenario)).await;
        match started {
            Ok(Ok(server)) => Ok(Arc::new(server)),
            Ok(Err(e)) => Err(BenchError::io(
                "could not start the mock API on loopback",
                e,
            )),
            Err(e) => Err(BenchError::Failed(format!(
                "the mock API's start-up task failed: {e}"
            ))),
        }
    }

    /// Stops a server from [`MockHost::serve`]; one still shared elsewhere stops when dropped.
    pub async fn stop(&self, server: Arc<MockServer>) {
        if let Ok(server) = Arc::try_unwrap(server) {
            let _ = self.runtime().spawn(server.shutdown()).await;
        }
    }

    fn runtime(&self) -> &Runtime {
        self.runtime
            .as_ref()
            .expect("the runtime is only taken when the host is dropped")
    }
}

impl Drop for MockHost {
    /// A runtime may not block while dropped inside another runtime; its thread is told to
    /// stop and left to finish on its own.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
