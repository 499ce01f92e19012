//! Numpy-style broadcasting (to be written).
