// Starts Swagger UI on /api/docs (service/api_docs.py). A file, not an inline script: the page's
// Content-Security-Policy allows scripts from the service's own origin only.
// swagger-ui-bundle.js, loaded just before this file, defines window.SwaggerUIBundle.

const root = document.getElementById("swagger-ui");

window.ui = window.SwaggerUIBundle({
  // The page names its OpenAPI document (data-spec-url): its path is the server's to say.
  url: root.dataset.specUrl,
  domNode: root,
  // Nothing from another origin, and no other document: no validator badge (which Swagger UI would
  // fetch from validator.swagger.io), no ?url= or ?configUrl= taken from the address bar.
  validatorUrl: null,
  queryConfigEnabled: false,
});
