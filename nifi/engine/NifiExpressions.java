// Evaluates property values with Apache NiFi's own Expression Language and parameter parser, the way a processor's
// context does (StandardProcessContext): the EL-aware parameter parser substitutes the `#{…}` references outside
// `${…}`, Query.prepareWithParametersPreEvaluated compiles the result, and it is evaluated over the FlowFile's
// attributes with the parameter context as the evaluation's parameter lookup (for `#{…}` inside `${…}`).
// Reads {"cases": [{"value", "parameters", "attributes"}]} on stdin; writes {"nifiVersion", "results"} on stdout,
// each result {"value"} or {"error"}. Run by nifi/nifi-engine.ts.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.apache.nifi.attribute.expression.language.Query;
import org.apache.nifi.attribute.expression.language.StandardEvaluationContext;
import org.apache.nifi.parameter.ExpressionLanguageAwareParameterParser;
import org.apache.nifi.parameter.Parameter;
import org.apache.nifi.parameter.ParameterLookup;

public final class NifiExpressions {
    private NifiExpressions() {
    }

    private static Map<String, String> strings(final JsonNode node) {
        final Map<String, String> map = new HashMap<>();
        if (node != null) {
            node.fields().forEachRemaining(e -> map.put(e.getKey(), e.getValue().isNull() ? null : e.getValue().asText()));
        }
        return map;
    }

    private static ParameterLookup lookup(final Map<String, String> values) {
        return new ParameterLookup() {
            @Override
            public Optional<Parameter> getParameter(final String name) {
                if (!values.containsKey(name)) {
                    return Optional.empty();
                }
                return Optional.of(new Parameter.Builder().name(name).value(values.get(name)).build());
            }

            @Override
            public boolean isEmpty() {
                return values.isEmpty();
            }

            @Override
            public long getVersion() {
                return 1;
            }
        };
    }

    public static void main(final String[] args) throws Exception {
        final ObjectMapper json = new ObjectMapper();
        final JsonNode request = json.readTree(System.in);
        final ObjectNode answer = json.createObjectNode();
        answer.put("nifiVersion", Query.class.getPackage().getImplementationVersion());
        final ArrayNode results = answer.putArray("results");
        final Map<JsonNode, ParameterLookup> lookups = new HashMap<>();
        for (final JsonNode item : request.get("cases")) {
            final ObjectNode result = results.addObject();
            try {
                final ParameterLookup parameters = lookups.computeIfAbsent(item.get("parameters"), p -> lookup(strings(p)));
                final String effective = new ExpressionLanguageAwareParameterParser().parseTokens(item.get("value").asText()).substitute(parameters);
                final StandardEvaluationContext context = new StandardEvaluationContext(strings(item.get("attributes")), Map.of(), parameters);
                result.put("value", Query.prepareWithParametersPreEvaluated(effective).evaluateExpressions(context, null));
            } catch (final Exception | StackOverflowError e) {
                result.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
        json.writeValue(System.out, answer);
    }
}
