package web

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/qwen-ls/qwen-ls/tools"
)

//go:embed webfetch.md
var webFetchDescription string

const webFetchSchema = `{
  "type": "object",
  "properties": {
    "url": {
      "type": "string",
      "description": "The http:// or https:// URL of the page to fetch."
    },
    "prompt": {
      "type": "string",
      "description": "What to extract from the page or answer about it."
    }
  },
  "required": ["url", "prompt"]
}`

// Limits of one fetch (tools.md §3.9).
const (
	webFetchTimeout   = 10 * time.Second
	webFetchBodyLimit = 10 << 20
)

// webFetchAccept is the Accept header: the types web_fetch can read, the
// one it needs least work for first.
const webFetchAccept = "text/markdown, text/html, text/plain"

// webFetchSystem is the system text of the side request that reads the page.
const webFetchSystem = `You read one web page on behalf of someone else. Answer their request using only the page content in the message, and keep the answer short and to the point. If the page does not contain what they ask for, say so in one sentence. Reply with the answer alone: no greeting, no preamble, no remarks about these instructions.`

// webFetchUser is the user text of the side request: the request, the URL,
// and the page between two "---" lines.
func webFetchUser(prompt, pageURL, page string) string {
	return "Request: " + prompt + "\n" +
		"Page URL: " + pageURL + "\n" +
		"\n---\n" + page + "\n---\n"
}

// Fetch is the web_fetch tool (tools.md §3.9): it fetches a page, turns
// it into Markdown, and has the session's model answer the call's prompt
// from it.
type Fetch struct {
	tools.Base
	env *tools.Env

	// Resolver and Dial replace the system's resolver and dialer (tests
	// inject fakes). Set them before the first call.
	Resolver Resolver
	Dial     DialFunc
}

// NewFetch returns the web_fetch tool working in env.
func NewFetch(env *tools.Env) *Fetch {
	return &Fetch{env: env, Base: tools.Base{Spec: tools.Spec{
		Name:        "web_fetch",
		DisplayName: "WebFetch",
		Description: webFetchDescription,
		Schema:      []byte(webFetchSchema),
		Kind:        tools.KindFetch,
	}}}
}

// parseFetchURL returns the call's trimmed url and its parsed form, or the
// validation error of §3.9.
func parseFetchURL(params map[string]any) (string, *url.URL, *tools.ToolError) {
	raw, _ := tools.String(params, "url")
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", nil, tools.InvalidParams(`Argument "url" must not be empty.`)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return "", nil, tools.InvalidParams(`Argument "url" must be an http:// or https:// URL.`)
	}
	return raw, u, nil
}

// Validate checks the url and the prompt.
func (w *Fetch) Validate(params map[string]any) *tools.ToolError {
	if _, _, terr := parseFetchURL(params); terr != nil {
		return terr
	}
	if p, _ := tools.String(params, "prompt"); strings.TrimSpace(p) == "" {
		return tools.InvalidParams(`Argument "prompt" must not be empty.`)
	}
	return nil
}

// Describe names the URL and the start of the prompt.
func (w *Fetch) Describe(params map[string]any) string {
	raw, _ := tools.String(params, "url")
	prompt, _ := tools.String(params, "prompt")
	return "Fetching content from " + strings.TrimSpace(raw) +
		" and processing with prompt: \"" + cutText(prompt, 100) + "\""
}

// ShouldConfirm asks before every fetch, offering a rule for the host.
func (w *Fetch) ShouldConfirm(_ context.Context, _ *tools.Call, params map[string]any) (*tools.Confirmation, *tools.ToolError) {
	raw, u, terr := parseFetchURL(params)
	if terr != nil {
		return nil, terr
	}
	prompt, _ := tools.String(params, "prompt")
	return &tools.Confirmation{
		Title: "Confirm Web Fetch",
		Details: &tools.InfoConfirmation{
			Prompt:          "Fetch content from " + raw + " and process with: " + prompt,
			URLs:            []string{raw},
			PermissionRules: []string{"WebFetch(" + strings.ToLower(u.Hostname()) + ")"},
		},
	}, nil
}

// githubRawURL turns a GitHub file page
// (github.com/<owner>/<repo>/blob/<ref>/<path>) into the URL of the raw
// file; other URLs come back unchanged.
func githubRawURL(u *url.URL) *url.URL {
	host := strings.ToLower(u.Hostname())
	if host != "github.com" && host != "www.github.com" {
		return u
	}
	parts := strings.SplitN(strings.TrimPrefix(u.EscapedPath(), "/"), "/", 5)
	if len(parts) != 5 || parts[2] != "blob" {
		return u
	}
	for _, p := range parts {
		if p == "" {
			return u
		}
	}
	raw, err := url.Parse("https://raw.githubusercontent.com/" +
		parts[0] + "/" + parts[1] + "/" + parts[3] + "/" + parts[4])
	if err != nil {
		return u
	}
	return raw
}

// fetchFailure is why a fetch gave no page text: a result error for the
// model, or (err) the call's cancellation, which ends the turn.
type fetchFailure struct {
	terr *tools.ToolError
	err  error
}

// Execute fetches the page and returns the model's answer about it.
func (w *Fetch) Execute(ctx context.Context, call *tools.Call, params map[string]any, _ func(tools.Output)) (tools.Result, error) {
	raw, u, terr := parseFetchURL(params)
	if terr != nil {
		return tools.Result{Error: terr}, nil
	}
	prompt, _ := tools.String(params, "prompt")
	failed := func(reason string) (tools.Result, error) {
		return tools.ErrorResult(tools.ErrorWebFetchFallbackFailed, "Could not fetch "+raw+": "+reason), nil
	}
	var model tools.Model
	if call != nil {
		model = call.Model
	}
	if model == nil {
		// Checked first: without a model there is nothing to fetch for.
		return failed("No model is configured to read the page.")
	}

	page, fail := w.fetch(ctx, raw, githubRawURL(u))
	if fail != nil {
		if fail.err != nil {
			return tools.Result{}, fail.err
		}
		return tools.Result{Error: fail.terr}, nil
	}

	answer, err := model.Complete(ctx, webFetchSystem, webFetchUser(prompt, raw, page))
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return failed("The model request failed: " + sentenceEnd(err.Error()))
	}
	answer = strings.TrimSpace(answer)
	if answer == "" {
		return failed("The model gave an empty answer.")
	}
	return tools.TextResult(answer, tools.Markdown("Fetched "+raw+".")), nil
}

// fetch GETs target through the guard and returns its text as Markdown,
// cut at pageTextLimit characters. raw is the URL as the model gave it, for
// messages.
func (w *Fetch) fetch(ctx context.Context, raw string, target *url.URL) (string, *fetchFailure) {
	fail := func(t tools.ErrorType, msg string) (string, *fetchFailure) {
		return "", &fetchFailure{terr: tools.NewError(t, msg)}
	}
	failed := func(reason string) (string, *fetchFailure) {
		return fail(tools.ErrorWebFetchFallbackFailed, "Could not fetch "+raw+": "+reason)
	}
	cancelled := func() (string, *fetchFailure) { return "", &fetchFailure{err: ctx.Err()} }

	guard := &netGuard{
		Resolver:     w.Resolver,
		Dial:         w.Dial,
		AllowPrivate: w.env.Settings().Bool("tools.webFetch.allowPrivateAddresses", false),
	}
	client := guard.Client(0)
	defer client.CloseIdleConnections()

	fctx, cancel := context.WithTimeout(ctx, webFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(fctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return failed("The request could not be made: " + sentenceEnd(err.Error()))
	}
	req.Header.Set("Accept", webFetchAccept)
	req.Header.Set("User-Agent", "qwen-ls web_fetch")

	// reason explains a transport failure; "" means the call was cancelled.
	reason := func(err error) string {
		switch {
		case ctx.Err() != nil:
			return ""
		case errors.Is(err, context.DeadlineExceeded) || fctx.Err() != nil:
			return fmt.Sprintf("The server did not answer within %d seconds.", int(webFetchTimeout/time.Second))
		}
		var tooMany *tooManyRedirectsError
		if errors.As(err, &tooMany) {
			return fmt.Sprintf("It redirected more than %d times.", maxRedirects)
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return "The request failed: " + sentenceEnd(err.Error())
	}

	resp, err := client.Do(req)
	if err != nil {
		var refused *refusedAddressError
		if errors.As(err, &refused) {
			where := raw
			if refused.URL != "" && refused.URL != target.String() {
				where = refused.URL
			}
			return fail(tools.ErrorExecutionDenied, fmt.Sprintf(
				"Refusing to fetch %s: %s resolves to a private or loopback address (%s). "+
					"Set tools.webFetch.allowPrivateAddresses to true to allow this.",
				where, refused.Host, refused.IP))
		}
		r := reason(err)
		if r == "" {
			return cancelled()
		}
		return failed(r)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The standard text, not the server's own phrase, which can say
		// anything.
		answered := fmt.Sprintf("The server answered %d", resp.StatusCode)
		if text := http.StatusText(resp.StatusCode); text != "" {
			answered += " " + text
		}
		return failed(answered + ".")
	}

	contentType := resp.Header.Get("Content-Type")
	mediaType := mediaTypeOf(contentType)
	if mediaType != "" && pageKind(mediaType) == "" {
		// Known to be unreadable: do not download it.
		return fail(tools.ErrorWebFetchProcessing, fmt.Sprintf("Unsupported content type %s at %s.", mediaType, raw))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, webFetchBodyLimit))
	if err != nil {
		r := reason(err)
		if r == "" {
			return cancelled()
		}
		return failed(r)
	}
	if mediaType == "" {
		contentType = http.DetectContentType(body)
		mediaType = mediaTypeOf(contentType)
		if pageKind(mediaType) == "" {
			return fail(tools.ErrorWebFetchProcessing, fmt.Sprintf("Unsupported content type %s at %s.", mediaType, raw))
		}
	}

	text := decodeText(body, contentType)
	if pageKind(mediaType) == "html" {
		md, err := htmlToMarkdown(fctx, text, resp.Request.URL.String())
		if err != nil {
			if ctx.Err() != nil {
				return cancelled()
			}
			return fail(tools.ErrorWebFetchProcessing, fmt.Sprintf("The HTML of %s could not be converted: %v.", raw, err))
		}
		text = md
	}
	return cutText(text, pageTextLimit), nil
}

// mediaTypeOf returns the lower-case media type of a Content-Type header,
// "" when there is none.
func mediaTypeOf(contentType string) string {
	if strings.TrimSpace(contentType) == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// pageKind says how web_fetch reads a media type: "html", "text" (used as
// is), or "" (not at all).
func pageKind(mediaType string) string {
	switch mediaType {
	case "text/html", "application/xhtml+xml":
		return "html"
	case "text/markdown", "text/x-markdown", "text/plain":
		return "text"
	}
	return ""
}

// sentenceEnd ends an error text, which may or may not have its own full
// stop, with exactly one.
func sentenceEnd(s string) string {
	return strings.TrimRight(strings.TrimSpace(s), ".") + "."
}
