package http

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/intentd/intentd"
)

func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(OpenAPI)
	if err != nil {
		t.Fatalf("openapi.json does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	return doc
}

// TestOpenAPIRoutes checks the document against the routes: every route is an
// operation with the same role (x-role, and the bearer scope), and every operation is
// a route, so that neither can gain a path the other lacks.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1", doc.OpenAPI)
	}
	seen := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			pattern := strings.NewReplacer("{intent_id}", ":id", "{policy_id}", ":id", "{mandate_id}", ":id", "{webhook_id}", ":id", "{tile_path}", "*path").Replace(path)
			key := method + " " + pattern
			seen[key] = true
			rt, _ := matchRoute(method, strings.ReplaceAll(pattern, ":id", "x"))
			if rt == nil || rt.pattern != pattern {
				t.Errorf("%s %s is in the document but no route", method, path)
				continue
			}
			role, _ := op.Extensions["x-role"].(string)
			if Role(role) != rt.role {
				t.Errorf("%s %s: x-role %q, the route needs %q", method, path, role, rt.role)
			}
			var scopes []string
			if op.Security != nil {
				for _, req := range *op.Security {
					scopes = append(scopes, req["bearer"]...)
				}
			}
			if rt.role == "" && len(scopes) != 0 || rt.role != "" && !slices.Equal(scopes, []string{string(rt.role)}) {
				t.Errorf("%s %s: security scopes %q, the route needs %q", method, path, scopes, rt.role)
			}
			if rt.role != "" {
				for _, status := range []int{401, 403, 500} {
					if op.Responses.Status(status) == nil {
						t.Errorf("%s %s: no %d response", method, path, status)
					}
				}
			}
		}
	}
	for _, rt := range routes {
		if !seen[rt.method+" "+rt.pattern] {
			t.Errorf("route %s %s is not in the document", rt.method, rt.pattern)
		}
	}
}

// TestOpenAPIErrorCodes checks that ErrorCode lists exactly the codes the service has.
func TestOpenAPIErrorCodes(t *testing.T) {
	doc := loadOpenAPI(t)
	codes := []string{
		intentd.CodeInternal, intentd.CodeIntentNotFound, intentd.CodePolicyNotFound, intentd.CodeIntentExists,
		intentd.CodeProposalExists, intentd.CodeIntentExpired, intentd.CodeAuthorshipInvalid, intentd.CodeUnsignedNotPermitted,
		intentd.CodeCapacityExceeded, intentd.CodePolicyInUse, intentd.CodePolicyInvalid, intentd.CodeInvalidIntent,
		intentd.CodeInvalidID, intentd.CodeAttrsMismatch, intentd.CodeInvalidProposal, intentd.CodeTooManySubscribers,
		intentd.CodeShuttingDown, intentd.CodeProofNotReady, intentd.CodeNoProof, intentd.CodeStorageFull, intentd.CodeStoreUnavailable,
		intentd.CodeStoreMissing, intentd.CodeStoreChanged, intentd.CodeBackupInProgress,
		intentd.CodePreviewLimit, intentd.CodeMemberUnavailable, intentd.CodeLogNotFound,
		intentd.CodeAgentSignatureRequired, intentd.CodeAgentSignatureInvalid, intentd.CodeAgentSignatureReplayed, intentd.CodeAgentNotDelegated,
		intentd.CodeMandateNotFound, intentd.CodeMandateExists, intentd.CodeInvalidMandate, intentd.CodeInvalidPurchase,
		intentd.CodeInvalidRevocation, intentd.CodeMandateRevoked, intentd.CodeMandateExpired, intentd.CodeMandateExhausted,
		intentd.CodeRevocationForbidden,
		intentd.CodeMandatePurchase,
		intentd.CodeAnalysisUnavailable, intentd.CodeAnalysisBusy, intentd.CodePolicyUnanalysable,
		intentd.CodeWebhookNotFound, intentd.CodeInvalidWebhook, intentd.CodeWebhookLimit, intentd.CodeWebhooksUnavailable,
		CodeInvalidJSON, CodeUnsupportedContentType, CodeBodyTooLarge, CodeMethodNotAllowed, CodeNotFound,
		CodeMalformedAuthorship, CodeSupersededShape, CodeInvalidLastEventID, CodeInvalidFilter,
		CodeUnauthorized, CodeForbidden, CodeLimitExceeded, CodePolicyTooLarge, CodeNotReady,
	}
	var enum []string
	for _, v := range doc.Components.Schemas["ErrorCode"].Value.Enum {
		enum = append(enum, v.(string))
	}
	slices.Sort(codes)
	slices.Sort(enum)
	if !slices.Equal(codes, enum) {
		t.Fatalf("ErrorCode enum = %q\nthe service's codes = %q", enum, codes)
	}
}

// TestServeOpenAPI checks that GET /openapi.json answers the embedded document as is.
func TestServeOpenAPI(t *testing.T) {
	ts := httptest.NewServer(NewServer(openEngine(t), Options{}))
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(body, OpenAPI) {
		t.Fatalf("GET /openapi.json: %d %s, %d bytes; want 200 application/json, the %d bytes of openapi.json",
			resp.StatusCode, resp.Header.Get("Content-Type"), len(body), len(OpenAPI))
	}
}
