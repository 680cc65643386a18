//! Pure controllers: each observes store changes, decides at a given instant, and writes through
//! a [`kubeplane_store::Client`]. None reads the wall clock.
