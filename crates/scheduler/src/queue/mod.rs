//! The scheduling queue: activeQ, backoffQ, unschedulablePods, nominator.
