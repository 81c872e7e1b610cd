// Package web holds the tools that reach the network: web_fetch
// (tools.md §3.9) and web_search (tools.md §3.10) with its providers, the
// network guard both dial through, and the HTML-to-Markdown conversion of
// fetched pages.
//
// The entry points are NewFetch and NewSearch, which return the two tools,
// and SearchAvailable, which tells whether web_search has a provider. Both
// tools' HTTP clients dial through netGuard (netguard.go), a resolver and
// dialer that refuse private, loopback and link-local addresses, also
// after redirects.
//
// The package imports tools for the tool contract (Tool, Base, Result, Env)
// and nothing else of qwen-ls; tools/toolset puts the two tools in the list
// of built-ins.
package web
