import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Vends a provider token from the token vending function URL with the JDK alone (Java 17):
 * java.net.http and a SigV4 signature (service "lambda") computed with javax.crypto.
 * Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN,
 * as Lambda sets them; elsewhere, take them from your credential provider.
 *
 * <pre>
 * TOKEN_VENDING_URL=https://&lt;url-id&gt;.lambda-url.eu-west-1.on.aws AWS_REGION=eu-west-1 \
 *     java Vend.java ba_123
 * </pre>
 */
public final class Vend {
  private static final DateTimeFormatter AMZ_DATE =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'");

  /** The vend answer's JSON, or an exception with the status and body. */
  static String vendToken(String baseUrl, String region, String scope, int minTtl,
      String accessKeyId, String secretAccessKey, String sessionToken) throws Exception {
    // The canonical query: parameters sorted by name, RFC 3986 percent-encoded. Sent as signed.
    Map<String, String> params = new TreeMap<>();
    params.put("min_ttl", Integer.toString(minTtl));
    if (scope != null) params.put("scope", scope);
    String query = params.entrySet().stream()
        .map(e -> encode(e.getKey()) + "=" + encode(e.getValue()))
        .collect(Collectors.joining("&"));
    URI uri = URI.create(baseUrl + "/token?" + query);
    String host = uri.getPort() == -1 ? uri.getHost() : uri.getHost() + ":" + uri.getPort();

    String amzDate = ZonedDateTime.now(ZoneOffset.UTC).format(AMZ_DATE);
    String date = amzDate.substring(0, 8);
    // Signed headers, sorted by name.
    Map<String, String> headers = new TreeMap<>();
    headers.put("host", host);
    headers.put("x-amz-date", amzDate);
    if (sessionToken != null) headers.put("x-amz-security-token", sessionToken);
    String canonicalHeaders = headers.entrySet().stream()
        .map(e -> e.getKey() + ":" + e.getValue().trim() + "\n").collect(Collectors.joining());
    String signedHeaders = String.join(";", headers.keySet());
    String canonicalRequest = String.join("\n", "GET", "/token", query, canonicalHeaders,
        signedHeaders, hex(sha256("")));
    String scopeOfKey = date + "/" + region + "/lambda/aws4_request";
    String stringToSign = String.join("\n", "AWS4-HMAC-SHA256", amzDate, scopeOfKey,
        hex(sha256(canonicalRequest)));
    byte[] key = hmac(("AWS4" + secretAccessKey).getBytes(StandardCharsets.UTF_8), date);
    for (String part : new String[] {region, "lambda", "aws4_request"}) key = hmac(key, part);
    String signature = hex(hmac(key, stringToSign));

    HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET()
        .header("x-amz-date", amzDate)
        .header("authorization", "AWS4-HMAC-SHA256 Credential=" + accessKeyId + "/" + scopeOfKey
            + ", SignedHeaders=" + signedHeaders + ", Signature=" + signature);
    if (sessionToken != null) request.header("x-amz-security-token", sessionToken);
    // HttpClient sends the Host header itself, as host[:port], the value signed above.
    HttpResponse<String> response = HttpClient.newHttpClient()
        .send(request.build(), HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() != 200) {
      // 403 {"Message":"Forbidden"}: refused by the URL (signature, IAM);
      // otherwise application/problem+json {"status","code","title","detail"}.
      throw new IllegalStateException("vend answered " + response.statusCode() + ": "
          + response.body());
    }
    return response.body();
  }

  /** RFC 3986: everything but A-Z a-z 0-9 - _ . ~ percent-encoded. */
  static String encode(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8)
        .replace("+", "%20").replace("*", "%2A").replace("%7E", "~");
  }

  static byte[] sha256(String data) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(data.getBytes(StandardCharsets.UTF_8));
  }

  static byte[] hmac(byte[] key, String data) throws Exception {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key, "HmacSHA256"));
    return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
  }

  static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }

  /** One JSON field, enough for this demo; use your JSON library in a service. */
  static String field(String json, String name) {
    var m = java.util.regex.Pattern.compile("\"" + name + "\"\\s*:\\s*\"?([^\",}]*)").matcher(json);
    return m.find() ? m.group(1) : "";
  }

  public static void main(String[] args) throws Exception {
    String scope = args.length > 0 ? args[0] : null;
    String region = System.getenv().getOrDefault("AWS_REGION", "us-east-1");
    String json;
    try {
      json = vendToken(System.getenv("TOKEN_VENDING_URL"), region, scope, 300,
          System.getenv("AWS_ACCESS_KEY_ID"), System.getenv("AWS_SECRET_ACCESS_KEY"),
          System.getenv("AWS_SESSION_TOKEN"));
    } catch (IllegalStateException e) {
      System.err.println(e.getMessage());
      System.exit(1);
      return;
    }
    // Use it as "Authorization: Bearer " + access_token; never log it.
    System.out.println("token_type=" + field(json, "token_type") + " scope=" + field(json, "scope")
        + " expires_in=" + field(json, "expires_in"));
  }
}
