package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The public endpoints; an entry's endpoint replaces them (tools.md §3.10).
const (
	tavilyEndpoint    = "https://api.tavily.com/search"
	googleEndpoint    = "https://www.googleapis.com/customsearch/v1"
	dashScopeEndpoint = "https://dashscope.aliyuncs.com/api/v1/indices/plugin/web_search"
)

// newItem builds a searchItem from a provider's fields; a result without a
// title is named by its URL, and a score outside [0, 1] counts as unknown.
func newItem(title, link, snippet string, score *float64, published string) searchItem {
	it := searchItem{
		Title: oneLine(title), URL: strings.TrimSpace(link), Snippet: oneLine(snippet),
		Published: oneLine(published),
	}
	if it.Title == "" {
		it.Title = it.URL
	}
	if score != nil && *score >= 0 && *score <= 1 {
		s := *score
		it.Score = &s
	}
	return it
}

// searchWith sends the query to provider p. The error's text is the
// <reason> of "The web search failed: <reason>." (without the period).
func searchWith(ctx context.Context, client *http.Client, p searchProvider, query string) (searchOutcome, error) {
	switch p.Type {
	case providerTavily:
		return searchTavily(ctx, client, p, query)
	case providerGoogle:
		return searchGoogle(ctx, client, p, query)
	case providerDashScope:
		return searchDashScope(ctx, client, p, query)
	}
	return searchOutcome{}, fmt.Errorf("%s is not a search provider", p.Type)
}

// callProvider sends req and decodes a 2xx JSON answer into into.
func callProvider(client *http.Client, req *http.Request, p searchProvider, into any) error {
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			if uerr.Timeout() {
				return fmt.Errorf("%s did not answer within %d seconds", p.Name(), int(webSearchTimeout/time.Second))
			}
			err = uerr.Err
		}
		return fmt.Errorf("the request to %s failed: %v", p.Name(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, searchBodyLimit))
	if err != nil {
		return fmt.Errorf("reading the answer of %s failed: %v", p.Name(), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("%s answered %d %s", p.Name(), resp.StatusCode, http.StatusText(resp.StatusCode))
		if excerpt := cutText(oneLine(string(body)), 300); excerpt != "" {
			msg += ": " + excerpt
		}
		return errors.New(strings.TrimRight(msg, " "))
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("%s sent an answer that is not the expected JSON: %v", p.Name(), err)
	}
	return nil
}

// endpointOf is the entry's endpoint, else the public one.
func endpointOf(p searchProvider, public string) string {
	if p.Endpoint != "" {
		return p.Endpoint
	}
	return public
}

func postJSON(ctx context.Context, endpoint, key string, body any) (*http.Request, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode search request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("the endpoint %s is not usable: %v", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return req, nil
}

func searchTavily(ctx context.Context, client *http.Client, p searchProvider, query string) (searchOutcome, error) {
	depth := p.SearchDepth
	if depth == "" {
		depth = "advanced"
	}
	n := p.MaxResults
	if n <= 0 {
		n = 5
	}
	req, err := postJSON(ctx, endpointOf(p, tavilyEndpoint), p.APIKey, map[string]any{
		"query":          query,
		"search_depth":   depth,
		"max_results":    n,
		"include_answer": p.IncludeAnswer,
	})
	if err != nil {
		return searchOutcome{}, err
	}
	var resp struct {
		Answer  string `json:"answer"`
		Results []struct {
			Title         string   `json:"title"`
			URL           string   `json:"url"`
			Content       string   `json:"content"`
			Score         *float64 `json:"score"`
			PublishedDate string   `json:"published_date"`
		} `json:"results"`
	}
	if err := callProvider(client, req, p, &resp); err != nil {
		return searchOutcome{}, err
	}
	out := searchOutcome{Answer: resp.Answer}
	for _, r := range resp.Results {
		out.Items = append(out.Items, newItem(r.Title, r.URL, r.Content, r.Score, r.PublishedDate))
	}
	return out, nil
}

func searchGoogle(ctx context.Context, client *http.Client, p searchProvider, query string) (searchOutcome, error) {
	endpoint := endpointOf(p, googleEndpoint)
	u, err := url.Parse(endpoint)
	if err != nil {
		return searchOutcome{}, fmt.Errorf("the endpoint %s is not usable: %v", endpoint, err)
	}
	num := p.MaxResults
	if num <= 0 || num > 10 {
		num = 10 // the Custom Search API answers at most 10 per request
	}
	q := u.Query()
	q.Set("key", p.APIKey)
	q.Set("cx", p.SearchEngineID)
	q.Set("q", query)
	q.Set("num", strconv.Itoa(num))
	if p.SafeSearch != "" {
		q.Set("safe", p.SafeSearch)
	}
	if p.Language != "" {
		q.Set("lr", "lang_"+p.Language)
	}
	if p.Country != "" {
		q.Set("cr", "country"+strings.ToUpper(p.Country))
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return searchOutcome{}, fmt.Errorf("the endpoint %s is not usable: %v", endpoint, err)
	}
	req.Header.Set("Accept", "application/json")
	var resp struct {
		Items []struct {
			Title   string `json:"title"`
			Link    string `json:"link"`
			Snippet string `json:"snippet"`
		} `json:"items"`
	}
	if err := callProvider(client, req, p, &resp); err != nil {
		// The key travels in the query string; keep it out of messages.
		return searchOutcome{}, errors.New(strings.ReplaceAll(err.Error(), p.APIKey, "<key>"))
	}
	var out searchOutcome
	for _, it := range resp.Items {
		out.Items = append(out.Items, newItem(it.Title, it.Link, it.Snippet, nil, ""))
	}
	return out, nil
}

func searchDashScope(ctx context.Context, client *http.Client, p searchProvider, query string) (searchOutcome, error) {
	rows := p.MaxResults
	if rows <= 0 {
		rows = 10
	}
	req, err := postJSON(ctx, endpointOf(p, dashScopeEndpoint), p.APIKey, map[string]any{
		"uq":   query,
		"page": 1,
		"rows": rows,
	})
	if err != nil {
		return searchOutcome{}, err
	}
	var resp struct {
		Status  int     `json:"status"`
		Message *string `json:"message"`
		Data    struct {
			Docs []struct {
				Title           string   `json:"title"`
				URL             string   `json:"url"`
				Snippet         string   `json:"snippet"`
				Score           *float64 `json:"_score"`
				TimestampFormat string   `json:"timestamp_format"`
			} `json:"docs"`
		} `json:"data"`
	}
	if err := callProvider(client, req, p, &resp); err != nil {
		return searchOutcome{}, err
	}
	if resp.Status != 0 {
		msg := "no message"
		if resp.Message != nil && strings.TrimSpace(*resp.Message) != "" {
			msg = oneLine(*resp.Message)
		}
		return searchOutcome{}, fmt.Errorf("DashScope reported status %d: %s", resp.Status, msg)
	}
	var out searchOutcome
	for _, d := range resp.Data.Docs {
		out.Items = append(out.Items, newItem(d.Title, d.URL, d.Snippet, d.Score, d.TimestampFormat))
	}
	return out, nil
}
