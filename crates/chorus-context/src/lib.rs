//! Token counting, media cost models, data-part assembly and trimming.
