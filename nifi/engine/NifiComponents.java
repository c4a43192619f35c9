// Describes NiFi components as NiFi itself declares them: the classes of the jars on the classpath by reflection
// (an instance's PropertyDescriptors and Relationships, the class's @DynamicProperty, @DynamicRelationship and
// @WritesAttribute annotations, the controller service APIs it implements), and the components of NARs from their
// META-INF/docs/extension-manifest.xml (what NiFi's build wrote from the same declarations).
// Reads {"classes": [...], "nars": {"<file>": [types]}} on stdin; writes {"components", "files"} on stdout.
// Run by nifi/nifi-engine.ts.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.InputStream;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.TreeSet;
import java.util.zip.ZipFile;
import javax.xml.parsers.DocumentBuilderFactory;
import org.apache.nifi.annotation.behavior.DynamicProperties;
import org.apache.nifi.annotation.behavior.DynamicProperty;
import org.apache.nifi.annotation.behavior.DynamicRelationship;
import org.apache.nifi.annotation.behavior.WritesAttribute;
import org.apache.nifi.annotation.behavior.WritesAttributes;
import org.apache.nifi.components.AllowableValue;
import org.apache.nifi.components.ConfigurableComponent;
import org.apache.nifi.components.PropertyDescriptor;
import org.apache.nifi.controller.ControllerService;
import org.apache.nifi.processor.Processor;
import org.apache.nifi.processor.Relationship;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

public final class NifiComponents {
    private static final ObjectMapper JSON = new ObjectMapper();

    private NifiComponents() {
    }

    private static ObjectNode fromClass(final String type) throws Exception {
        final Class<?> type_ = Class.forName(type);
        final ConfigurableComponent component = (ConfigurableComponent) type_.getDeclaredConstructor().newInstance();
        final ObjectNode out = JSON.createObjectNode();
        final ArrayNode properties = out.putArray("properties");
        for (final PropertyDescriptor d : component.getPropertyDescriptors()) {
            final ObjectNode p = properties.addObject();
            p.put("name", d.getName());
            p.put("displayName", d.getDisplayName());
            p.put("required", d.isRequired());
            p.put("sensitive", d.isSensitive());
            p.put("defaultValue", d.getDefaultValue());
            if (d.getAllowableValues() == null) {
                p.putNull("allowableValues");
            } else {
                final ArrayNode values = p.putArray("allowableValues");
                for (final AllowableValue v : d.getAllowableValues()) {
                    values.add(v.getValue());
                }
            }
            p.put("service", d.getControllerServiceDefinition() == null ? null : d.getControllerServiceDefinition().getName());
            p.put("expressionLanguage", d.getExpressionLanguageScope() == null ? "NONE" : d.getExpressionLanguageScope().name());
        }
        final TreeSet<String> relationships = new TreeSet<>();
        if (component instanceof Processor processor) {
            for (final Relationship r : processor.getRelationships()) {
                relationships.add(r.getName());
            }
        }
        out.set("relationships", JSON.valueToTree(relationships));
        out.put("dynamicRelationships", type_.isAnnotationPresent(DynamicRelationship.class));
        out.put("dynamicProperties", type_.isAnnotationPresent(DynamicProperty.class) || type_.isAnnotationPresent(DynamicProperties.class));
        final TreeSet<String> writes = new TreeSet<>();
        final WritesAttributes many = type_.getAnnotation(WritesAttributes.class);
        if (many != null) {
            for (final WritesAttribute w : many.value()) {
                writes.add(w.attribute());
            }
        }
        final WritesAttribute one = type_.getAnnotation(WritesAttribute.class);
        if (one != null) {
            writes.add(one.attribute());
        }
        out.set("writes", JSON.valueToTree(writes));
        final TreeSet<String> provides = new TreeSet<>();
        final Deque<Class<?>> pending = new ArrayDeque<>();
        for (Class<?> c = type_; c != null; c = c.getSuperclass()) {
            pending.addAll(java.util.List.of(c.getInterfaces()));
        }
        while (!pending.isEmpty()) {
            final Class<?> api = pending.pop();
            if (ControllerService.class.isAssignableFrom(api) && api != ControllerService.class) {
                provides.add(api.getName());
            }
            pending.addAll(java.util.List.of(api.getInterfaces()));
        }
        out.set("provides", JSON.valueToTree(provides));
        return out;
    }

    private static Element child(final Element parent, final String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                return e;
            }
        }
        return null;
    }

    private static String text(final Element parent, final String name) {
        final Element e = child(parent, name);
        return e == null ? null : e.getTextContent();
    }

    private static java.util.List<Element> children(final Element parent, final String name) {
        final java.util.List<Element> found = new java.util.ArrayList<>();
        if (parent != null) {
            for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
                if (n instanceof Element e && e.getTagName().equals(name)) {
                    found.add(e);
                }
            }
        }
        return found;
    }

    private static ObjectNode fromManifest(final Element extension) {
        final ObjectNode out = JSON.createObjectNode();
        final ArrayNode properties = out.putArray("properties");
        for (final Element d : children(child(extension, "properties"), "property")) {
            final ObjectNode p = properties.addObject();
            p.put("name", text(d, "name"));
            p.put("displayName", text(d, "displayName"));
            p.put("required", Boolean.parseBoolean(text(d, "required")));
            p.put("sensitive", Boolean.parseBoolean(text(d, "sensitive")));
            p.put("defaultValue", text(d, "defaultValue"));
            final Element values = child(d, "allowableValues");
            if (values == null) {
                p.putNull("allowableValues");
            } else {
                final ArrayNode list = p.putArray("allowableValues");
                children(values, "allowableValue").forEach(v -> list.add(text(v, "value")));
            }
            final Element service = child(d, "controllerServiceDefinition");
            p.put("service", service == null ? null : text(service, "className"));
            final String scope = text(d, "expressionLanguageScope");
            p.put("expressionLanguage", scope == null ? "NONE" : scope);
        }
        final TreeSet<String> relationships = new TreeSet<>();
        children(child(extension, "relationships"), "relationship").forEach(r -> relationships.add(text(r, "name")));
        out.set("relationships", JSON.valueToTree(relationships));
        out.put("dynamicRelationships", child(extension, "dynamicRelationship") != null);
        out.put("dynamicProperties", !children(child(extension, "dynamicProperties"), "dynamicProperty").isEmpty());
        final TreeSet<String> writes = new TreeSet<>();
        children(child(extension, "writesAttributes"), "writesAttribute").forEach(w -> writes.add(text(w, "name")));
        out.set("writes", JSON.valueToTree(writes));
        final TreeSet<String> provides = new TreeSet<>();
        children(child(extension, "providedServiceAPIs"), "providedServiceAPI").forEach(a -> provides.add(text(a, "className")));
        out.set("provides", JSON.valueToTree(provides));
        return out;
    }

    public static void main(final String[] args) throws Exception {
        final JsonNode request = JSON.readTree(System.in);
        final ObjectNode answer = JSON.createObjectNode();
        final ObjectNode components = answer.putObject("components");
        final ObjectNode files = answer.putObject("files");
        for (final JsonNode type : request.get("classes")) {
            components.set(type.asText(), fromClass(type.asText()));
            final var location = Class.forName(type.asText()).getProtectionDomain().getCodeSource().getLocation();
            files.put(type.asText(), new File(location.toURI()).getName());
        }
        for (final var nars = request.get("nars").fields(); nars.hasNext();) {
            final var nar = nars.next();
            try (ZipFile zip = new ZipFile(nar.getKey()); InputStream in = zip.getInputStream(zip.getEntry("META-INF/docs/extension-manifest.xml"))) {
                final Element manifest = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(in).getDocumentElement();
                for (final JsonNode wanted : nar.getValue()) {
                    final Element extension = children(child(manifest, "extensions"), "extension").stream()
                            .filter(e -> wanted.asText().equals(text(e, "name")))
                            .findFirst()
                            .orElseThrow(() -> new IllegalArgumentException(wanted.asText() + " is not in " + nar.getKey()));
                    components.set(wanted.asText(), fromManifest(extension));
                    files.put(wanted.asText(), new File(nar.getKey()).getName());
                }
            }
        }
        JSON.writerWithDefaultPrettyPrinter().writeValue(System.out, answer);
    }
}
