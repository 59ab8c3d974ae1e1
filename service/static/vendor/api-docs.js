// Built by frontend/build.mjs (make static) from frontend/src/api-docs.js: edit the source, not this file.
(() => {
  // src/api-docs.js
  var root = document.getElementById("swagger-ui");
  window.ui = window.SwaggerUIBundle({
    // The page names its OpenAPI document (data-spec-url): its path is the server's to say.
    url: root.dataset.specUrl,
    domNode: root,
    // Nothing from another origin, and no other document: no validator badge (which Swagger UI would
    // fetch from validator.swagger.io), no ?url= or ?configUrl= taken from the address bar.
    validatorUrl: null,
    queryConfigEnabled: false
  });
})();
