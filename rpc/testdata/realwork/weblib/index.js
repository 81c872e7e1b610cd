// A sibling package that web depends on through a file: dependency.
exports.double = (n) => n * 2;
