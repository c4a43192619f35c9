// Checks OpenLineage events by the standard's own artifacts, not by Load Control's reading of it (README "Lineage"):
// (a) each event strictly against the published JSON schemas — the spec's OpenLineage.json and the facet schemas of
//     its release, as the OpenLineage repository tags them (test/fixtures/openlineage-spec-1.46.0/) — by networknt's
//     json-schema-validator (draft 2020-12, formats asserted), every facet against the schema its _schemaURL names,
//     under the key that schema gives it; Load Control's own facets against schema/openlineage/;
// (b) each event parsed by openlineage-java's model (io.openlineage:openlineage-java, generated from that same
//     spec): written back by the client library's own mapper it must give the same JSON, and every standard facet
//     must land in its typed class (a misspelt key would only be an additional property).
// Request on stdin: {"schemaDirs": [...], "events": [...]}; answer on stdout: {"results": [{"errors": [...]}], ...}.
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import io.openlineage.client.OpenLineage;
import io.openlineage.client.OpenLineageClientUtils;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.node.ObjectNode;

public class OpenLineageValidator {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent";

  /** Every schema file under the folders, by its $id. */
  private static Map<String, String> schemas(List<String> dirs) throws IOException {
    Map<String, String> byId = new HashMap<>();
    for (String dir : dirs) {
      try (Stream<Path> files = Files.walk(Path.of(dir))) {
        for (Path file : files.filter(f -> f.toString().endsWith(".json")).toList()) {
          String text = Files.readString(file);
          JsonNode id = JSON.readTree(text).get("$id");
          if (id == null) throw new IllegalStateException(file + " has no $id");
          byId.put(id.asString(), text);
        }
      }
    }
    return byId;
  }

  private final SchemaRegistry registry;
  private final Map<String, String> byId;

  private OpenLineageValidator(Map<String, String> byId) {
    this.byId = byId;
    SchemaRegistryConfig config = SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build();
    this.registry =
        SchemaRegistry.withDefaultDialect(
            SpecificationVersion.DRAFT_2020_12, builder -> builder.schemas(byId).schemaRegistryConfig(config));
  }

  private void check(String where, String schemaUrl, JsonNode node, List<String> errors) {
    Schema schema = registry.getSchema(SchemaLocation.of(schemaUrl));
    for (Error error : schema.validate(node)) errors.add(where + ": " + error.toString());
  }

  /**
   * Each facet of a facets object against the schema its _schemaURL names, under the key that schema gives it, and
   * of the kind the place holds (a RunFacet under run.facets, an InputDatasetFacet under inputFacets, …).
   */
  private void checkFacets(String where, String kind, JsonNode facets, List<String> errors) {
    if (facets == null) return;
    for (Map.Entry<String, JsonNode> entry : facets.properties()) {
      String key = entry.getKey();
      JsonNode facet = entry.getValue();
      JsonNode url = facet.get("_schemaURL");
      if (url == null) {
        errors.add(where + "." + key + ": no _schemaURL");
        continue;
      }
      String file = url.asString().replaceFirst("#.*$", "");
      String text = byId.get(file);
      if (text == null) {
        errors.add(where + "." + key + ": _schemaURL " + url.asString() + " names no published facet schema");
        continue;
      }
      JsonNode declared = JSON.readTree(text).path("properties");
      if (!declared.has(key)) {
        errors.add(where + "." + key + ": the facet schema " + file + " names its facet " + declared.propertyNames());
        continue;
      }
      String definition = url.asString().replaceFirst("^[^#]*#/\\$defs/", "");
      String base = JSON.readTree(text).path("$defs").path(definition).path("allOf").path(0).path("$ref").asString("");
      if (!base.endsWith("#/$defs/" + kind))
        errors.add(where + "." + key + ": a " + base.replaceFirst("^.*/", "") + " where a " + kind + " belongs");
      ObjectNode wrapped = JSON.createObjectNode();
      wrapped.set(key, facet);
      check(where + "." + key, file, wrapped, errors);
    }
  }

  /** The typed facet the model has for a key (getNominalTime for nominalTime), or null when it has none. */
  private static Object typedFacet(Object facets, String key) throws ReflectiveOperationException {
    String getter = "get" + Character.toUpperCase(key.charAt(0)) + key.substring(1);
    for (Method method : facets.getClass().getMethods()) {
      if (method.getName().equals(getter) && method.getParameterCount() == 0) return method.invoke(facets);
    }
    return null;
  }

  private static void checkTyped(String where, JsonNode json, Object facets, List<String> errors)
      throws ReflectiveOperationException {
    if (json == null) return;
    for (Iterator<String> keys = json.propertyNames().iterator(); keys.hasNext(); ) {
      String key = keys.next();
      if (key.startsWith("loadControl_")) continue;
      if (facets == null || typedFacet(facets, key) == null)
        errors.add(where + "." + key + ": openlineage-java has no typed facet for it");
    }
  }

  private List<String> validate(JsonNode event) {
    List<String> errors = new ArrayList<>();
    check("event", RUN_EVENT, event, errors);
    checkFacets("run.facets", "RunFacet", event.path("run").get("facets"), errors);
    checkFacets("job.facets", "JobFacet", event.path("job").get("facets"), errors);
    for (String[] side : new String[][] {{"inputs", "inputFacets", "InputDatasetFacet"}, {"outputs", "outputFacets", "OutputDatasetFacet"}}) {
      int i = 0;
      for (JsonNode dataset : event.path(side[0])) {
        checkFacets(side[0] + "[" + i + "].facets", "DatasetFacet", dataset.get("facets"), errors);
        checkFacets(side[0] + "[" + i + "]." + side[1], side[2], dataset.get(side[1]), errors);
        i++;
      }
    }
    try {
      String text = JSON.writeValueAsString(event);
      OpenLineage.RunEvent parsed = OpenLineageClientUtils.runEventFromJson(text);
      ObjectNode again = (ObjectNode) JSON.readTree(OpenLineageClientUtils.toJson(parsed));
      // the model writes the instant it read in its own form (2026-10-01T06:00:00.12Z for …12000Z): the same instant
      if (Instant.parse(again.path("eventTime").asString()).equals(Instant.parse(event.path("eventTime").asString())))
        again.set("eventTime", event.get("eventTime"));
      if (!again.equals(event)) errors.add("openlineage-java: written back it differs: " + again);
      checkTyped("run.facets", event.path("run").get("facets"), parsed.getRun().getFacets(), errors);
      checkTyped("job.facets", event.path("job").get("facets"), parsed.getJob().getFacets(), errors);
      for (int i = 0; i < parsed.getInputs().size(); i++) {
        OpenLineage.InputDataset input = parsed.getInputs().get(i);
        checkTyped("inputs[" + i + "].facets", event.path("inputs").get(i).get("facets"), input.getFacets(), errors);
        checkTyped("inputs[" + i + "].inputFacets", event.path("inputs").get(i).get("inputFacets"), input.getInputFacets(), errors);
      }
      for (int i = 0; i < parsed.getOutputs().size(); i++) {
        OpenLineage.OutputDataset output = parsed.getOutputs().get(i);
        checkTyped("outputs[" + i + "].facets", event.path("outputs").get(i).get("facets"), output.getFacets(), errors);
        checkTyped("outputs[" + i + "].outputFacets", event.path("outputs").get(i).get("outputFacets"), output.getOutputFacets(), errors);
      }
    } catch (Exception e) {
      errors.add("openlineage-java: " + e);
    }
    return errors;
  }

  public static void main(String[] args) throws Exception {
    JsonNode request = JSON.readTree(System.in);
    List<String> dirs = new ArrayList<>();
    for (JsonNode dir : request.get("schemaDirs")) dirs.add(dir.asString());
    OpenLineageValidator validator = new OpenLineageValidator(schemas(dirs));
    ObjectNode answer = JSON.createObjectNode();
    var results = answer.putArray("results");
    for (JsonNode event : request.get("events")) {
      var result = results.addObject();
      var errors = result.putArray("errors");
      for (String error : validator.validate(event)) errors.add(error);
    }
    answer.put("openlineageJava", OpenLineage.class.getPackage().getImplementationVersion());
    answer.put("schemas", validator.byId.size());
    System.out.println(JSON.writeValueAsString(answer));
  }
}
