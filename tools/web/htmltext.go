package web

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	htmlmd "github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html/charset"
)

// pageTextLimit is how many characters of a page web_fetch hands to the
// model (tools.md §3.9).
const pageTextLimit = 100_000

// droppedElements carry nothing a reader of the page text can use: code,
// styling, embedded documents and pictures. The converter's base plugin
// already drops script, style, noscript, iframe and the head; they are
// listed again so that this list alone says what goes.
var droppedElements = []string{
	"script", "style", "noscript", "iframe", "svg", "img", "picture", "source",
	"template", "canvas", "object", "embed",
}

// htmlToMarkdown converts an HTML page to Markdown: headings, lists, tables,
// code and links (made absolute against pageURL when it is set) are kept;
// the droppedElements and a link left without text once its image is gone
// are not.
func htmlToMarkdown(ctx context.Context, page, pageURL string) (string, error) {
	conv := htmlmd.NewConverter(htmlmd.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(
			commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
		),
		table.NewTablePlugin(),
	))
	for _, name := range droppedElements {
		conv.Register.TagType(name, htmlmd.TagTypeRemove, htmlmd.PriorityEarly)
	}
	opts := []htmlmd.ConvertOptionFunc{htmlmd.WithContext(ctx)}
	if pageURL != "" {
		opts = append(opts, htmlmd.WithDomain(pageURL))
	}
	md, err := conv.ConvertString(page, opts...)
	if err != nil {
		return "", fmt.Errorf("convert html to markdown: %w", err)
	}
	return md, nil
}

// decodeText turns a text body into UTF-8. A byte-order mark or the charset
// of contentType decides; failing those, a body that is valid UTF-8 is
// taken as such, and anything else goes by the page's <meta> declaration
// (windows-1252 when there is none, as browsers do).
func decodeText(body []byte, contentType string) string {
	enc, name, certain := charset.DetermineEncoding(body, contentType)
	if !certain && utf8.Valid(body) {
		name = "utf-8"
	}
	if name != "utf-8" && enc != nil {
		if out, err := enc.NewDecoder().Bytes(body); err == nil {
			return strings.TrimPrefix(string(out), "\uFEFF")
		}
	}
	return strings.TrimPrefix(strings.ToValidUTF8(string(body), "\uFFFD"), "\uFEFF")
}

// cutText keeps the first limit characters (runes) of s.
func cutText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := 0
	for i := range s {
		if n == limit {
			return s[:i]
		}
		n++
	}
	return s
}
