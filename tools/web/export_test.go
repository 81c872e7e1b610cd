package web

// The black-box tests (package web_test) reach the network guard under its
// exported names.

type NetGuard = netGuard

var BlockedAddress = blockedAddress
